//! The CQL statement parser: text to [`ast::Parsed`], for the whole of
//! Cassandra 5.0's grammar (`Parser.g` / `Lexer.g`), hand-written recursive
//! descent over the tokens of [`lexer::tokenize`].
//!
//! Owns the syntax of every statement; what a statement means (does the table
//! exist, is the value of the column's type) is the executor's. Pure, any
//! thread; a parse borrows its text.
//!
//! Invariants:
//! 1. Every syntax error is a [`CqlError`] of kind `SyntaxError` carrying the
//!    byte offset of the token it is at, its message naming what was expected
//!    and what was found. Where Cassandra's parser itself refuses a statement
//!    that is syntactically whole (two PRIMARY KEY definitions, a feature that
//!    needs an index Strata does not have), the error is of kind `Invalid`,
//!    still with the offset.
//! 2. Terms, types, selectors and relations nest at most [`MAX_DEPTH`] levels;
//!    deeper input is a syntax error, never a stack overflow.
//! 3. Linear time: the text is tokenized once; the only look-back is the
//!    `(type) term` cast, whose trial type parse cannot span a `(`, so each
//!    token is re-read at most once.
//! 4. Names are folded (ast invariant 1) and bind markers numbered in text
//!    order across the whole statement (ast invariant 3) here, nowhere else.
//! 5. Keywords are Cassandra's: a reserved one ([`RESERVED`]) is a name only in
//!    double quotes; an unreserved one (`key`, `type`, `ttl`, `count`, `json`,
//!    `role`, ...) is a name wherever Cassandra's `unreserved_keyword` allows.
//!
//! Known differences from Cassandra, each refused with a clear `Invalid` error
//! rather than parsed into a tree the executor could misread: column masks
//! (`MASKED WITH`), `ORDER BY ... ANN OF`, custom index expressions
//! (`expr(index, ...)`), `GROUP BY` on anything but a column, collection and
//! tuple selectors over columns (`SELECT [a, b]`), type hints on columns in a
//! select clause, `DESCRIBE ... WITH INTERNALS` and CIDR role options.

use super::ast::*;
use super::error::{CqlError, CqlErrorKind};
use super::lexer::{tokenize, Kind, Lexer, Token};
use super::settings::{self, Setting};

/// How deep terms, types, selectors and relations may nest (invariant 2).
pub const MAX_DEPTH: usize = 64;

/// Cassandra's reserved keywords (`reserved_keywords.txt` of 5.0), lower case,
/// plus the boolean literals, which the lexer never reads as identifiers.
pub(crate) const RESERVED: &[&str] = &[
    "add",
    "allow",
    "alter",
    "and",
    "apply",
    "asc",
    "authorize",
    "batch",
    "begin",
    "by",
    "columnfamily",
    "create",
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "false",
    "from",
    "full",
    "grant",
    "if",
    "in",
    "index",
    "infinity",
    "insert",
    "into",
    "is",
    "keyspace",
    "limit",
    "materialized",
    "modify",
    "nan",
    "norecursive",
    "not",
    "null",
    "of",
    "on",
    "or",
    "order",
    "primary",
    "rename",
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "true",
    "truncate",
    "unlogged",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

/// The native types (`native_type`), lower case.
pub(crate) const NATIVE_TYPES: &[&str] = &[
    "ascii",
    "bigint",
    "blob",
    "boolean",
    "counter",
    "date",
    "decimal",
    "double",
    "duration",
    "float",
    "inet",
    "int",
    "smallint",
    "text",
    "time",
    "timestamp",
    "timeuuid",
    "tinyint",
    "uuid",
    "varchar",
    "varint",
];

/// Unreserved keywords that are not function names (`allowedFunctionName`
/// takes `unreserved_function_keyword`, `token` and `count` only).
pub(crate) const NOT_FUNCTION_NAMES: &[&str] = &[
    "cast",
    "distinct",
    "json",
    "key",
    "maxwritetime",
    "ttl",
    "writetime",
];

/// Names a user type cannot have unquoted besides the reserved keywords and the
/// native types (`non_type_ident`, `reservedTypeNames`).
pub(crate) const NOT_TYPE_NAMES: &[&str] = &[
    "bitstring",
    "byte",
    "cast",
    "complex",
    "count",
    "distinct",
    "enum",
    "interval",
    "json",
    "macaddr",
    "maxwritetime",
    "ttl",
    "writetime",
];

/// Every keyword of `Lexer.g` that is not reserved: `username` and `identity`
/// take a plain `IDENT`, which none of these is.
const UNRESERVED_KEYWORDS: &[&str] = &[
    "access",
    "aggregate",
    "aggregates",
    "all",
    "ann",
    "as",
    "ascii",
    "bigint",
    "blob",
    "boolean",
    "called",
    "cast",
    "cidrs",
    "cluster",
    "clustering",
    "columnfamilies",
    "compact",
    "contains",
    "count",
    "counter",
    "custom",
    "datacenters",
    "date",
    "decimal",
    "default",
    "distinct",
    "double",
    "duration",
    "exists",
    "filtering",
    "finalfunc",
    "float",
    "frozen",
    "function",
    "functions",
    "group",
    "hashed",
    "identity",
    "inet",
    "initcond",
    "input",
    "int",
    "internals",
    "json",
    "key",
    "keys",
    "keyspaces",
    "language",
    "like",
    "list",
    "login",
    "map",
    "masked",
    "maxwritetime",
    "mbean",
    "mbeans",
    "nologin",
    "nosuperuser",
    "only",
    "options",
    "partition",
    "password",
    "per",
    "permission",
    "permissions",
    "replace",
    "returns",
    "role",
    "roles",
    "select_masked",
    "sfunc",
    "smallint",
    "static",
    "storage",
    "stype",
    "superuser",
    "tables",
    "text",
    "time",
    "timestamp",
    "timeuuid",
    "tinyint",
    "trigger",
    "ttl",
    "tuple",
    "type",
    "types",
    "unmask",
    "unset",
    "user",
    "users",
    "uuid",
    "values",
    "varchar",
    "varint",
    "vector",
    "writetime",
];

fn one_of(list: &[&str], word: &str) -> bool {
    list.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Whether `word` must be double-quoted to be a name.
pub(crate) fn is_reserved(word: &str) -> bool {
    one_of(RESERVED, word)
}

type R<T> = Result<T, CqlError>;

impl<'a> Parser<'a> {
    /// A parser at the first token of `text`; a lexical error is a syntax
    /// error at its offset.
    fn over(text: &'a str) -> Result<Parser<'a>, CqlError> {
        let toks = tokenize(text).map_err(|e| CqlError::syntax("CQL", e.pos, &e.msg))?;
        Ok(Parser {
            text,
            toks,
            i: 0,
            markers: Vec::new(),
            depth: 0,
            what: "CQL",
        })
    }
}

/// Parses one statement, optionally ended by `;` (or several: Cassandra's
/// grammar takes `SELECT ...;;`). A second statement after the
/// `;` is a syntax error (use [`split_statements`] for scripts).
pub fn parse_statement(text: &str) -> Result<Parsed, CqlError> {
    let mut p = Parser::over(text)?;
    let statement = p.statement()?;
    while p.eat_p(";") {}
    if p.tok().kind != Kind::Eof {
        return Err(p.expected("end of statement"));
    }
    Ok(Parsed {
        statement,
        markers: p.markers,
    })
}

/// Parses one term (a literal, a collection, tuple or UDT literal, a
/// function call), the whole text: what a composite value's text form is.
pub fn parse_term(text: &str) -> Result<Term, CqlError> {
    let mut p = Parser::over(text)?;
    let term = p.term()?;
    if p.tok().kind != Kind::Eof {
        return Err(p.expected("end of value"));
    }
    Ok(term)
}

/// The byte range of each statement of a script, without its `;`, in order;
/// empty statements (`;;`) are skipped. Strings, `$$` strings, comments and
/// `BEGIN BATCH ... APPLY BATCH` (whose inner statements end with `;`) are
/// respected. Only a lexical error (an unterminated string, say) fails.
pub fn split_statements(text: &str) -> Result<Vec<(usize, usize)>, CqlError> {
    let toks = tokenize(text).map_err(|e| CqlError::syntax("CQL", e.pos, &e.msg))?;
    let is_word =
        |t: &Token, w: &str| t.kind == Kind::Word && text[t.start..t.end].eq_ignore_ascii_case(w);
    let is_semi = |t: &Token| t.kind == Kind::Punct && &text[t.start..t.end] == ";";
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut in_batch = false;
    for (k, t) in toks.iter().enumerate() {
        if t.kind == Kind::Eof {
            if let Some(s) = start {
                out.push((toks[s].start, toks[k - 1].end));
            }
            break;
        }
        let Some(s) = start else {
            if !is_semi(t) {
                start = Some(k);
                in_batch = is_word(t, "BEGIN");
            }
            continue;
        };
        if in_batch {
            if is_word(t, "APPLY") && toks.get(k + 1).is_some_and(|n| is_word(n, "BATCH")) {
                in_batch = false;
            }
            continue;
        }
        if is_semi(t) {
            out.push((toks[s].start, toks[k - 1].end));
            start = None;
        }
    }
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    /// Ends with an `Eof` token, which `advance` never moves past.
    toks: Vec<Token>,
    i: usize,
    markers: Vec<Option<Name>>,
    depth: usize,
    /// The statement being parsed, for messages ("SELECT", "CREATE TABLE").
    what: &'static str,
}

/// The name of the native function Cassandra calls for `CAST(x AS type)` in a
/// term (`CastFcts`): `castAs` and the type name capitalized.
fn cast_function_name(ty: &str) -> String {
    let mut out = String::from("castAs");
    let mut chars = ty.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.extend(chars);
    }
    out
}

impl<'a> Parser<'a> {
    // -- tokens ---------------------------------------------------------------

    fn tok(&self) -> &Token {
        &self.toks[self.i]
    }

    fn nth(&self, k: usize) -> &Token {
        &self.toks[(self.i + k).min(self.toks.len() - 1)]
    }

    fn pos(&self) -> usize {
        self.tok().start
    }

    fn advance(&mut self) -> usize {
        let j = self.i;
        if self.toks[j].kind != Kind::Eof {
            self.i += 1;
        }
        j
    }

    /// Consumes a token, returning where it starts.
    fn bump_pos(&mut self) -> usize {
        let j = self.advance();
        self.toks[j].start
    }

    fn text_of(&self, t: &Token) -> &'a str {
        &self.text[t.start..t.end]
    }

    fn word_at(&self, k: usize) -> Option<&'a str> {
        let t = self.nth(k);
        (t.kind == Kind::Word).then(|| &self.text[t.start..t.end])
    }

    fn is_kw_at(&self, k: usize, kw: &str) -> bool {
        self.word_at(k).is_some_and(|w| w.eq_ignore_ascii_case(kw))
    }

    fn at_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let at = self.at_kw(kw);
        if at {
            self.advance();
        }
        at
    }

    fn expect_kw(&mut self, kw: &str) -> R<usize> {
        if self.at_kw(kw) {
            Ok(self.bump_pos())
        } else {
            Err(self.expected(kw))
        }
    }

    fn is_p_at(&self, k: usize, p: &str) -> bool {
        let t = self.nth(k);
        t.kind == Kind::Punct && &self.text[t.start..t.end] == p
    }

    fn at_p(&self, p: &str) -> bool {
        self.is_p_at(0, p)
    }

    fn eat_p(&mut self, p: &str) -> bool {
        let at = self.at_p(p);
        if at {
            self.advance();
        }
        at
    }

    fn expect_p(&mut self, p: &str) -> R<usize> {
        if self.at_p(p) {
            Ok(self.bump_pos())
        } else {
            Err(self.expected(&format!("'{p}'")))
        }
    }

    /// `IF NOT EXISTS` if present.
    fn if_not_exists(&mut self) -> R<bool> {
        if self.eat_kw("IF") {
            self.expect_kw("NOT")?;
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// `IF EXISTS` if present.
    fn if_exists(&mut self) -> R<bool> {
        if self.eat_kw("IF") {
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    // -- errors ---------------------------------------------------------------

    fn describe(&self, t: &Token) -> String {
        let s = self.text_of(t);
        let short = match s.char_indices().nth(40) {
            Some((cut, _)) => format!("{}...", &s[..cut]),
            None => s.to_string(),
        };
        match t.kind {
            Kind::Eof => "end of input".to_string(),
            Kind::Word if is_reserved(s) => format!("reserved keyword '{short}'"),
            Kind::Str => format!("string {short}"),
            Kind::Quoted | Kind::EmptyQuoted => format!("quoted name {short}"),
            _ => format!("'{short}'"),
        }
    }

    fn syntax(&self, pos: usize, msg: &str) -> CqlError {
        CqlError::syntax(self.what, pos, msg)
    }

    /// "expected X, found Y" at the current token.
    fn expected(&self, what: &str) -> CqlError {
        let t = self.tok();
        let mut msg = format!("expected {what}, found {}", self.describe(t));
        if t.kind == Kind::Word && is_reserved(self.text_of(t)) && what.contains("name") {
            msg.push_str(" (double-quote it to use it as a name)");
        }
        self.syntax(t.start, &msg)
    }

    /// A statement Cassandra's parser refuses although it is whole (invariant 1).
    fn invalid(&self, pos: usize, msg: &str) -> CqlError {
        CqlError {
            kind: CqlErrorKind::Invalid,
            message: format!("{}: {msg} (at byte {pos})", self.what),
            position: Some(pos),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.syntax(
                self.pos(),
                &format!("expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // -- names ----------------------------------------------------------------

    /// Whether token `k` is an identifier (`ident`: a word that is not
    /// reserved, or a quoted name).
    fn is_name_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        match t.kind {
            Kind::Quoted => true,
            Kind::Word => !is_reserved(self.text_of(t)),
            _ => false,
        }
    }

    fn name_of(&self, t: &Token) -> Name {
        match t.kind {
            Kind::Quoted | Kind::EmptyQuoted | Kind::Str => Name {
                text: t.value.clone().unwrap_or_default(),
                quoted: true,
                pos: t.start,
            },
            _ => Name {
                text: self.text_of(t).to_ascii_lowercase(),
                quoted: false,
                pos: t.start,
            },
        }
    }

    /// `ident` / `noncol_ident` / `fident`.
    fn name(&mut self, what: &str) -> R<Name> {
        if self.is_name_at(0) {
            let j = self.advance();
            Ok(self.name_of(&self.toks[j]))
        } else {
            Err(self.expected(what))
        }
    }

    /// `cident`: an identifier or the legacy empty name `""`.
    fn cident(&mut self, what: &str) -> R<Name> {
        if self.tok().kind == Kind::EmptyQuoted {
            let j = self.advance();
            return Ok(self.name_of(&self.toks[j]));
        }
        self.name(what)
    }

    /// `[keyspace.]name`.
    fn qualified(&mut self, what: &str) -> R<QualifiedName> {
        if self.tok().kind == Kind::Qmark {
            return Err(self.syntax(self.pos(), &format!("a bind marker cannot be {what}")));
        }
        // `""` reads as a name here, so the schema layer refuses it as an
        // invalid table or keyspace name rather than as a syntax error.
        let first = self.cident(what)?;
        if self.eat_p(".") {
            let name = self.cident(what)?;
            Ok(QualifiedName {
                keyspace: Some(first),
                name,
            })
        } else {
            Ok(QualifiedName {
                keyspace: None,
                name: first,
            })
        }
    }

    fn keyspace_name(&mut self) -> R<Name> {
        if self.tok().kind == Kind::Qmark {
            return Err(self.syntax(self.pos(), "a bind marker cannot be a keyspace name"));
        }
        self.cident("a keyspace name")
    }

    /// Whether token `k` starts a role name (`roleName`).
    fn is_role_name_at(&self, k: usize) -> bool {
        self.is_name_at(k) || self.nth(k).kind == Kind::Str
    }

    /// `roleName`: an identifier, a quoted name or a string (which keeps its case).
    fn role_name(&mut self) -> R<Name> {
        if self.is_role_name_at(0) {
            let j = self.advance();
            Ok(self.name_of(&self.toks[j]))
        } else if self.tok().kind == Kind::Qmark {
            Err(self.syntax(self.pos(), "a bind marker cannot be a role name"))
        } else {
            Err(self.expected("a role name"))
        }
    }

    /// `username` / `identity`: a plain identifier or a string, case kept.
    fn plain_name(&mut self, what: &str) -> R<Name> {
        let t = self.tok();
        let ok = match t.kind {
            Kind::Str => true,
            Kind::Word => {
                let w = self.text_of(t);
                !is_reserved(w) && !one_of(UNRESERVED_KEYWORDS, w)
            }
            Kind::Quoted => {
                return Err(self.syntax(
                    t.start,
                    &format!("quoted names are not supported for {what}s; use a string"),
                ))
            }
            _ => false,
        };
        if !ok {
            return Err(self.expected(what));
        }
        let j = self.advance();
        let t = &self.toks[j];
        Ok(Name {
            text: t
                .value
                .clone()
                .unwrap_or_else(|| self.text_of(t).to_string()),
            quoted: true,
            pos: t.start,
        })
    }

    /// Whether a word can be a function name (`allowedFunctionName`).
    fn is_function_name_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        match t.kind {
            Kind::Quoted => true,
            Kind::Word => {
                let w = self.text_of(t);
                w.eq_ignore_ascii_case("token")
                    || (!is_reserved(w) && !one_of(NOT_FUNCTION_NAMES, w))
            }
            _ => false,
        }
    }

    /// Whether a function call starts at token `k`: `f(` or `ks.f(`.
    fn is_call_at(&self, k: usize) -> bool {
        (self.is_function_name_at(k) && self.is_p_at(k + 1, "("))
            || (self.is_name_at(k)
                && self.is_p_at(k + 1, ".")
                && self.is_function_name_at(k + 2)
                && self.is_p_at(k + 3, "("))
    }

    /// `functionName`: `[keyspace.]name`.
    fn function_name(&mut self) -> R<QualifiedName> {
        let keyspace = if self.is_name_at(0) && self.is_p_at(1, ".") {
            let ks = self.name("a keyspace name")?;
            self.advance();
            Some(ks)
        } else {
            None
        };
        if !self.is_function_name_at(0) {
            return Err(self.expected("a function name"));
        }
        let j = self.advance();
        Ok(QualifiedName {
            keyspace,
            name: self.name_of(&self.toks[j]),
        })
    }

    // -- literals and terms -----------------------------------------------------

    fn is_constant_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        match t.kind {
            Kind::Str | Kind::Integer | Kind::Float | Kind::Duration | Kind::Uuid | Kind::Hex => {
                true
            }
            Kind::Word => one_of(&["true", "false", "nan", "infinity"], self.text_of(t)),
            _ => false,
        }
    }

    fn constant(&mut self) -> R<Literal> {
        let j = self.i;
        let t = &self.toks[j];
        let s = self.text_of(t);
        let value = match t.kind {
            Kind::Str => Literal::String(t.value.clone().unwrap_or_default()),
            Kind::Integer => Literal::Integer(s.to_string()),
            Kind::Float if s.eq_ignore_ascii_case("-nan") => Literal::Float("NaN".to_string()),
            Kind::Float if s.eq_ignore_ascii_case("-infinity") => {
                Literal::Float("-Infinity".to_string())
            }
            Kind::Float => Literal::Float(s.to_string()),
            Kind::Duration => Literal::Duration(s.to_string()),
            Kind::Uuid => Literal::Uuid(s.to_string()),
            Kind::Hex => {
                let hex = &s.as_bytes()[2..];
                if !hex.len().is_multiple_of(2) {
                    return Err(
                        self.syntax(t.start, "a blob literal needs an even number of hex digits")
                    );
                }
                let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                Literal::Blob(
                    hex.chunks(2)
                        .map(|p| (nibble(p[0]) << 4) | nibble(p[1]))
                        .collect(),
                )
            }
            Kind::Word if s.eq_ignore_ascii_case("true") => Literal::Boolean(true),
            Kind::Word if s.eq_ignore_ascii_case("false") => Literal::Boolean(false),
            Kind::Word if s.eq_ignore_ascii_case("nan") => Literal::Float("NaN".to_string()),
            Kind::Word if s.eq_ignore_ascii_case("infinity") => {
                Literal::Float("Infinity".to_string())
            }
            _ => return Err(self.expected("a constant")),
        };
        self.advance();
        Ok(value)
    }

    /// `?` or `:name`, numbered (invariant 4).
    fn is_marker_at(&self, k: usize) -> bool {
        self.nth(k).kind == Kind::Qmark || self.is_p_at(k, ":")
    }

    fn marker(&mut self) -> R<BindMarker> {
        let pos = self.pos();
        let name = if self.tok().kind == Kind::Qmark {
            self.advance();
            None
        } else if self.eat_p(":") {
            Some(self.name("a bind marker name")?)
        } else {
            return Err(self.expected("a bind marker"));
        };
        let index = self.markers.len();
        self.markers.push(name.clone());
        Ok(BindMarker { index, name, pos })
    }

    /// Whether a term can start at token `k`.
    fn can_start_term_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        match t.kind {
            Kind::Qmark => true,
            Kind::Punct => ["[", "{", "(", "-", ":"].contains(&self.text_of(t)),
            Kind::Word => {
                self.is_constant_at(k)
                    || self.is_kw_at(k, "null")
                    || (self.is_kw_at(k, "cast") && self.is_p_at(k + 1, "("))
                    || self.is_call_at(k)
            }
            Kind::Quoted => self.is_call_at(k),
            Kind::Eof | Kind::EmptyQuoted => false,
            _ => true,
        }
    }

    /// `term`: arithmetic over simple terms.
    fn term(&mut self) -> R<Term> {
        self.enter()?;
        let out = self.term_add();
        self.leave();
        out
    }

    /// Another operator in a chain: a chain nests its tree one level per
    /// operator, so it counts toward the nesting bound (invariant 2).
    fn chain(&self, links: &mut usize) -> R<()> {
        *links += 1;
        if self.depth + *links > MAX_DEPTH {
            return Err(self.syntax(
                self.pos(),
                &format!("expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn term_add(&mut self) -> R<Term> {
        let mut links = 0;
        let mut left = self.term_mul()?;
        loop {
            let op = if self.at_p("+") {
                ArithOp::Add
            } else if self.at_p("-") {
                ArithOp::Sub
            } else {
                break;
            };
            // `[1] + c` in an UPDATE is a prepend: the `+` is not the term's.
            if !self.can_start_term_at(1) {
                break;
            }
            self.chain(&mut links)?;
            self.advance();
            let right = self.term_mul()?;
            let pos = left.pos();
            left = Term::Arith {
                op,
                left: Box::new(left),
                right: Box::new(right),
                pos,
            };
        }
        Ok(left)
    }

    fn term_mul(&mut self) -> R<Term> {
        let mut links = 0;
        let mut left = self.term_group()?;
        loop {
            let op = if self.at_p("*") {
                ArithOp::Mul
            } else if self.at_p("/") {
                ArithOp::Div
            } else if self.at_p("%") {
                ArithOp::Rem
            } else {
                break;
            };
            self.chain(&mut links)?;
            self.advance();
            let right = self.term_group()?;
            let pos = left.pos();
            left = Term::Arith {
                op,
                left: Box::new(left),
                right: Box::new(right),
                pos,
            };
        }
        Ok(left)
    }

    fn term_group(&mut self) -> R<Term> {
        if self.at_p("-") {
            let pos = self.bump_pos();
            let term = self.simple_term()?;
            return Ok(Term::Negate {
                term: Box::new(term),
                pos,
            });
        }
        self.simple_term()
    }

    /// `simpleTerm`: a value, a function call or a cast. Nesting is counted
    /// where it recurses: [`Self::term`] and the cast's operand.
    fn simple_term(&mut self) -> R<Term> {
        let pos = self.pos();
        if self.is_constant_at(0) {
            let value = self.constant()?;
            return Ok(Term::Literal { value, pos });
        }
        if self.at_kw("null") {
            self.advance();
            return Ok(Term::Literal {
                value: Literal::Null,
                pos,
            });
        }
        if self.is_marker_at(0) {
            return Ok(Term::Bind(self.marker()?));
        }
        if self.eat_p("[") {
            let items = self.term_list("]")?;
            return Ok(Term::List { items, pos });
        }
        if self.at_p("{") {
            return self.brace_literal();
        }
        if self.at_p("(") {
            if let Some(ty) =
                self.try_type_hint(|p, k| p.can_start_term_at(k) && !p.is_p_at(k, "-"))?
            {
                self.enter()?;
                let term = self.simple_term();
                self.leave();
                let term = term?;
                return Ok(Term::Cast {
                    ty,
                    term: Box::new(term),
                    pos,
                });
            }
            self.advance();
            let items = self.term_list(")")?;
            // Always a tuple, as in Cassandra's grammar, where a term has no
            // grouping parentheses: `(1)` is a one-element tuple literal (its
            // missing components null), `(1 + 2) * 3` a tuple times 3.
            if items.is_empty() {
                return Err(self.syntax(pos, "expected a term inside '()'"));
            }
            return Ok(Term::Tuple { items, pos });
        }
        if self.at_kw("cast") && self.is_p_at(1, "(") {
            self.advance();
            self.advance();
            let term = self.simple_term()?;
            self.expect_kw("AS")?;
            let ty = self.native_type()?;
            self.expect_p(")")?;
            return Ok(Term::Function {
                name: QualifiedName {
                    keyspace: Some(Name {
                        text: "system".to_string(),
                        quoted: false,
                        pos,
                    }),
                    name: Name {
                        text: cast_function_name(&ty),
                        quoted: true,
                        pos,
                    },
                },
                args: vec![term],
                pos,
            });
        }
        if self.is_call_at(0) {
            let name = self.function_name()?;
            self.expect_p("(")?;
            let args = self.term_list(")")?;
            return Ok(Term::Function { name, args, pos });
        }
        Err(self.expected("a term"))
    }

    /// `term (',' term)*` up to `close` (consumed); empty allowed.
    fn term_list(&mut self, close: &str) -> R<Vec<Term>> {
        let mut items = Vec::new();
        if self.eat_p(close) {
            return Ok(items);
        }
        loop {
            items.push(self.term()?);
            if self.eat_p(close) {
                return Ok(items);
            }
            if !self.eat_p(",") {
                return Err(self.expected(&format!("',' or '{close}'")));
            }
        }
    }

    /// A `{...}` literal: a map, a set, or a user type value (every key a bare
    /// field name), `{}` being an empty map.
    fn brace_literal(&mut self) -> R<Term> {
        let pos = self.expect_p("{")?;
        if self.eat_p("}") {
            return Ok(Term::Map {
                entries: Vec::new(),
                pos,
            });
        }
        if self.is_name_at(0) && self.is_p_at(1, ":") {
            let mut fields = Vec::new();
            loop {
                let field = self.name("a field name")?;
                self.expect_p(":")?;
                fields.push((field, self.term()?));
                if self.eat_p("}") {
                    return Ok(Term::Udt { fields, pos });
                }
                self.expect_p(",")?;
            }
        }
        let first = self.term()?;
        if self.eat_p(":") {
            let mut entries = vec![(first, self.term()?)];
            while self.eat_p(",") {
                let k = self.term()?;
                self.expect_p(":")?;
                entries.push((k, self.term()?));
            }
            self.expect_p("}")?;
            return Ok(Term::Map { entries, pos });
        }
        let mut items = vec![first];
        while self.eat_p(",") {
            items.push(self.term()?);
        }
        self.expect_p("}")?;
        Ok(Term::Set { items, pos })
    }

    /// At `(`: if `(type)` follows and then something `next_ok` accepts, the
    /// type (consumed); otherwise nothing is consumed (invariant 3: the trial
    /// cannot cross a `(`).
    fn try_type_hint(&mut self, next_ok: fn(&Parser<'a>, usize) -> bool) -> R<Option<TypeExpr>> {
        let t = self.nth(1);
        let starts_type = matches!(t.kind, Kind::Str | Kind::Word | Kind::Quoted);
        if !starts_type {
            return Ok(None);
        }
        let save = self.i;
        let save_depth = self.depth;
        self.advance();
        if let Ok(ty) = self.type_expr() {
            if self.at_p(")") && next_ok(self, 1) {
                self.advance();
                return Ok(Some(ty));
            }
        }
        self.i = save;
        self.depth = save_depth;
        Ok(None)
    }

    /// `intValue`: an integer or a bind marker.
    fn int_value(&mut self) -> R<Term> {
        let pos = self.pos();
        if self.tok().kind == Kind::Integer {
            let value = self.constant()?;
            return Ok(Term::Literal { value, pos });
        }
        if self.is_marker_at(0) {
            return Ok(Term::Bind(self.marker()?));
        }
        Err(self.expected("an integer or a bind marker"))
    }

    // -- types ----------------------------------------------------------------

    fn native_type(&mut self) -> R<String> {
        match self.word_at(0) {
            Some(w) if one_of(NATIVE_TYPES, w) => {
                self.advance();
                Ok(w.to_ascii_lowercase())
            }
            _ => Err(self.expected("a native type")),
        }
    }

    /// `comparatorType`.
    fn type_expr(&mut self) -> R<TypeExpr> {
        self.enter()?;
        let out = self.type_inner();
        self.leave();
        out
    }

    fn type_inner(&mut self) -> R<TypeExpr> {
        let t = self.tok();
        if t.kind == Kind::Str {
            let name = t.value.clone().unwrap_or_default();
            self.advance();
            return Ok(TypeExpr::Custom(name));
        }
        let generic = self.is_p_at(1, "<");
        if let Some(w) = self.word_at(0) {
            let lw = w.to_ascii_lowercase();
            match lw.as_str() {
                "frozen" if generic => {
                    let pos = self.pos();
                    self.advance();
                    self.advance();
                    let inner = self.type_expr()?;
                    self.expect_p(">")?;
                    if matches!(inner, TypeExpr::Native(_) | TypeExpr::Custom(_)) {
                        return Err(self.syntax(
                            pos,
                            "frozen<> is only allowed on collections, tuples, and user-defined types",
                        ));
                    }
                    return Ok(TypeExpr::Frozen(Box::new(inner)));
                }
                "map" if generic => {
                    self.advance();
                    self.advance();
                    let k = self.type_expr()?;
                    self.expect_p(",")?;
                    let v = self.type_expr()?;
                    self.expect_p(">")?;
                    return Ok(TypeExpr::Map(Box::new(k), Box::new(v)));
                }
                "list" | "set" if generic => {
                    self.advance();
                    self.advance();
                    let e = Box::new(self.type_expr()?);
                    self.expect_p(">")?;
                    return Ok(if lw == "list" {
                        TypeExpr::List(e)
                    } else {
                        TypeExpr::Set(e)
                    });
                }
                "tuple" if generic => {
                    self.advance();
                    self.advance();
                    let mut items = vec![self.type_expr()?];
                    while self.eat_p(",") {
                        items.push(self.type_expr()?);
                    }
                    self.expect_p(">")?;
                    return Ok(TypeExpr::Tuple(items));
                }
                "vector" if generic => {
                    self.advance();
                    self.advance();
                    let e = self.type_expr()?;
                    self.expect_p(",")?;
                    let t = self.tok();
                    let dim = match t.kind {
                        // 0 parses: Cassandra refuses it when the type is
                        // prepared, with its own message.
                        Kind::Integer => self.text_of(t).parse::<u32>().ok(),
                        _ => return Err(self.expected("a vector dimension")),
                    };
                    let Some(dim) = dim else {
                        return Err(self.syntax(
                            t.start,
                            "a vector dimension must be a 32-bit unsigned integer",
                        ));
                    };
                    self.advance();
                    self.expect_p(">")?;
                    return Ok(TypeExpr::Vector(Box::new(e), dim));
                }
                // `int.x` is the user type x of a keyspace named int.
                _ if one_of(NATIVE_TYPES, &lw) && !self.is_p_at(1, ".") => {
                    self.advance();
                    return Ok(TypeExpr::Native(lw));
                }
                _ => {}
            }
        }
        Ok(TypeExpr::Udt(self.user_type_name()?))
    }

    /// `userTypeName`: `[keyspace.]name`, the name not a native type.
    fn user_type_name(&mut self) -> R<QualifiedName> {
        let keyspace = if self.is_name_at(0) && self.is_p_at(1, ".") {
            let ks = self.name("a keyspace name")?;
            self.advance();
            Some(ks)
        } else {
            None
        };
        let t = self.tok();
        if t.kind == Kind::Word {
            let w = self.text_of(t);
            if one_of(NATIVE_TYPES, w) || one_of(NOT_TYPE_NAMES, w) {
                return Err(self.syntax(
                    t.start,
                    &format!("'{w}' cannot be a user type name unquoted"),
                ));
            }
        }
        let name = self.name("a type")?;
        Ok(QualifiedName { keyspace, name })
    }

    // -- settings ---------------------------------------------------------------

    /// One `name = value` of a `WITH` clause, read by the settings parser shared
    /// with `--table-options` (`settings::parse_setting`) in place.
    fn setting(&mut self) -> R<Setting> {
        let start = self.pos();
        if !self.is_name_at(0) {
            return Err(self.expected("an option name"));
        }
        // `ID = <uuid>` (Cassandra's table id, as its snapshots' schema.cql
        // writes it): the one option whose value is an unquoted UUID, which
        // the settings lexer does not read.
        if self.at_kw("id")
            && self.nth(1).kind == Kind::Punct
            && self.text_of(self.nth(1)) == "="
            && self.nth(2).kind == Kind::Uuid
        {
            let name_pos = self.pos();
            let value_pos = self.nth(2).start;
            let value = self.text_of(self.nth(2)).to_string();
            self.i += 3;
            return Ok(Setting {
                name: "id".to_string(),
                name_pos,
                value: crate::cql::literal::Literal::Scalar(value),
                value_pos,
            });
        }
        let mut lex = Lexer::at(self.text, start);
        let setting = settings::parse_setting_syntax(&mut lex).map_err(|(option, e)| {
            self.syntax(e.pos, &format!("in option '{option}': {}", e.msg))
        })?;
        // Resume at the token where the settings lexer stopped; a token of ours
        // that it stopped inside is something it does not read (`1h`, say).
        let off = lex.offset();
        let j = self.toks.partition_point(|t| t.start < off);
        if j <= self.i || self.toks[j - 1].end > off {
            let t = &self.toks[j.saturating_sub(1).max(self.i)];
            return Err(self.syntax(
                t.start,
                &format!(
                    "in option '{}': expected a string, number, boolean or map, found {}",
                    setting.name,
                    self.describe(t)
                ),
            ));
        }
        self.i = j;
        Ok(setting)
    }

    /// `property (AND property)*`.
    fn settings(&mut self) -> R<Vec<Setting>> {
        let mut out = vec![self.setting()?];
        while self.eat_kw("AND") {
            out.push(self.setting()?);
        }
        Ok(out)
    }

    // -- statements ---------------------------------------------------------------

    fn statement(&mut self) -> R<Statement> {
        let pos = self.pos();
        let Some(first) = self.word_at(0) else {
            return Err(self.expected("a statement"));
        };
        match first.to_ascii_lowercase().as_str() {
            "select" => {
                self.what = "SELECT";
                Ok(Statement::Select(Box::new(self.select()?)))
            }
            "insert" => {
                self.what = "INSERT";
                Ok(Statement::Insert(Box::new(self.insert()?)))
            }
            "update" => {
                self.what = "UPDATE";
                Ok(Statement::Update(Box::new(self.update()?)))
            }
            "delete" => {
                self.what = "DELETE";
                Ok(Statement::Delete(Box::new(self.delete()?)))
            }
            "begin" => {
                self.what = "BATCH";
                Ok(Statement::Batch(Box::new(self.batch()?)))
            }
            "use" => {
                self.what = "USE";
                self.advance();
                Ok(Statement::Use(self.keyspace_name()?))
            }
            "truncate" => {
                self.what = "TRUNCATE";
                self.advance();
                if !self.eat_kw("TABLE") {
                    self.eat_kw("COLUMNFAMILY");
                }
                Ok(Statement::Truncate {
                    table: self.qualified("a table name")?,
                })
            }
            "create" => self.create(pos),
            "alter" => self.alter(pos),
            "drop" => self.drop(pos),
            "grant" => {
                self.what = "GRANT";
                self.grant_or_revoke(true)
            }
            "revoke" => {
                self.what = "REVOKE";
                self.grant_or_revoke(false)
            }
            "list" => self.list(),
            "describe" | "desc" => {
                self.what = "DESCRIBE";
                self.advance();
                Ok(Statement::Describe(self.describe_statement()?))
            }
            "add" if self.is_kw_at(1, "IDENTITY") => {
                self.what = "ADD IDENTITY";
                self.advance();
                self.advance();
                self.if_not_exists()?;
                self.plain_name("an identity")?;
                self.expect_kw("TO")?;
                self.expect_kw("ROLE")?;
                self.plain_name("a role name")?;
                Ok(Statement::Unsupported {
                    feature: UnsupportedFeature::Identity,
                    pos,
                })
            }
            _ => Err(self.expected("a statement")),
        }
    }

    // SELECT ---------------------------------------------------------------------

    /// Whether a selector can start at token `k` (decides `SELECT JSON ...` and
    /// `SELECT DISTINCT ...` against columns named `json` and `distinct`, as
    /// Cassandra's syntactic predicates do).
    fn can_start_selector_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        match t.kind {
            Kind::Word => {
                let w = self.text_of(t);
                !is_reserved(w) || one_of(&["token", "null", "true", "false", "nan", "infinity"], w)
            }
            Kind::Punct => ["*", "(", "[", "{", "-", ":"].contains(&self.text_of(t)),
            Kind::Eof | Kind::EmptyQuoted => false,
            _ => true,
        }
    }

    fn select(&mut self) -> R<Select> {
        self.expect_kw("SELECT")?;
        let json = self.at_kw("JSON") && self.can_start_selector_at(1);
        if json {
            self.advance();
        }
        let distinct = self.at_kw("DISTINCT") && self.can_start_selector_at(1);
        if distinct {
            self.advance();
        }
        let selection = self.selection()?;
        self.expect_kw("FROM")?;
        let table = self.qualified("a table name")?;
        let where_clause = if self.eat_kw("WHERE") {
            self.where_clause()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.at_kw("GROUP") && self.is_kw_at(1, "BY") {
            self.advance();
            self.advance();
            loop {
                let pos = self.pos();
                match self.selector()? {
                    Selector::Column(name) => group_by.push(name),
                    _ => {
                        return Err(self.invalid(
                            pos,
                            "GROUP BY on a function or an expression is not supported; group by primary key columns",
                        ))
                    }
                }
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        let mut order_by = Vec::new();
        if self.eat_kw("ORDER") {
            self.expect_kw("BY")?;
            loop {
                let column = self.cident("a column name")?;
                if self.at_kw("ANN") && self.is_kw_at(1, "OF") {
                    let pos = self.pos();
                    return Err(self.invalid(
                        pos,
                        "ORDER BY ... ANN OF needs a storage-attached index, which is not supported",
                    ));
                }
                let descending = if self.eat_kw("DESC") {
                    true
                } else {
                    self.eat_kw("ASC");
                    false
                };
                order_by.push(Ordering { column, descending });
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        let per_partition_limit = if self.at_kw("PER") {
            self.advance();
            self.expect_kw("PARTITION")?;
            self.expect_kw("LIMIT")?;
            Some(self.int_value()?)
        } else {
            None
        };
        let limit = if self.eat_kw("LIMIT") {
            Some(self.int_value()?)
        } else {
            None
        };
        let allow_filtering = if self.eat_kw("ALLOW") {
            self.expect_kw("FILTERING")?;
            true
        } else {
            false
        };
        Ok(Select {
            json,
            distinct,
            selection,
            table,
            where_clause,
            group_by,
            order_by,
            per_partition_limit,
            limit,
            allow_filtering,
        })
    }

    /// `*` or `selector [AS alias], ...`.
    fn selection(&mut self) -> R<Selection> {
        if self.at_p("*") {
            let pos = self.bump_pos();
            return Ok(Selection::Star { pos });
        }
        let mut items = Vec::new();
        loop {
            let selector = self.selector()?;
            let alias = if self.eat_kw("AS") {
                Some(self.name("an alias")?)
            } else {
                None
            };
            items.push(SelectItem { selector, alias });
            if !self.eat_p(",") {
                return Ok(Selection::Items(items));
            }
        }
    }

    /// `unaliasedSelector`: arithmetic over selector groups.
    fn selector(&mut self) -> R<Selector> {
        self.enter()?;
        let out = self.selector_add();
        self.leave();
        out
    }

    fn selector_add(&mut self) -> R<Selector> {
        let mut links = 0;
        let mut left = self.selector_mul()?;
        loop {
            let op = if self.at_p("+") {
                ArithOp::Add
            } else if self.at_p("-") {
                ArithOp::Sub
            } else {
                break;
            };
            self.chain(&mut links)?;
            let pos = self.bump_pos();
            let right = self.selector_mul()?;
            left = Selector::Arith {
                op,
                left: Box::new(left),
                right: Box::new(right),
                pos,
            };
        }
        Ok(left)
    }

    fn selector_mul(&mut self) -> R<Selector> {
        let mut links = 0;
        let mut left = self.selector_group()?;
        loop {
            let op = if self.at_p("*") {
                ArithOp::Mul
            } else if self.at_p("/") {
                ArithOp::Div
            } else if self.at_p("%") {
                ArithOp::Rem
            } else {
                break;
            };
            self.chain(&mut links)?;
            let pos = self.bump_pos();
            let right = self.selector_group()?;
            left = Selector::Arith {
                op,
                left: Box::new(left),
                right: Box::new(right),
                pos,
            };
        }
        Ok(left)
    }

    /// `selectionGroup`: `- group`, or a primary with field and element
    /// modifiers.
    fn selector_group(&mut self) -> R<Selector> {
        if self.at_p("-") {
            let pos = self.bump_pos();
            self.enter()?;
            let inner = self.selector_group();
            self.leave();
            return Ok(Selector::Negate {
                selector: Box::new(inner?),
                pos,
            });
        }
        let primary = self.selector_primary()?;
        self.selector_modifiers(primary)
    }

    /// `.field` and `[key]` / `[from..to]` after a selector.
    fn selector_modifiers(&mut self, mut s: Selector) -> R<Selector> {
        let mut links = 0;
        loop {
            if self.at_p(".") || self.at_p("[") {
                self.chain(&mut links)?;
            }
            if self.eat_p(".") {
                let field = self.name("a field name")?;
                s = Selector::Field {
                    selector: Box::new(s),
                    field,
                };
            } else if self.at_p("[") {
                let pos = self.bump_pos();
                if self.eat_p("..") {
                    let to = self.term()?;
                    self.expect_p("]")?;
                    s = Selector::Slice {
                        selector: Box::new(s),
                        from: None,
                        to: Some(to),
                        pos,
                    };
                    continue;
                }
                let key = self.term()?;
                if self.eat_p("..") {
                    let to = if self.at_p("]") {
                        None
                    } else {
                        Some(self.term()?)
                    };
                    self.expect_p("]")?;
                    s = Selector::Slice {
                        selector: Box::new(s),
                        from: Some(key),
                        to,
                        pos,
                    };
                } else {
                    self.expect_p("]")?;
                    s = Selector::Element {
                        selector: Box::new(s),
                        key,
                        pos,
                    };
                }
            } else {
                return Ok(s);
            }
        }
    }

    /// A selector as a term, when it is one (constants, markers, and
    /// collections, tuples, arithmetic and calls over them).
    fn selector_term(s: Selector) -> Option<Term> {
        Some(match s {
            Selector::Term(t) => t,
            Selector::Arith {
                op,
                left,
                right,
                pos,
            } => Term::Arith {
                op,
                left: Box::new(Self::selector_term(*left)?),
                right: Box::new(Self::selector_term(*right)?),
                pos,
            },
            Selector::Negate { selector, pos } => Term::Negate {
                term: Box::new(Self::selector_term(*selector)?),
                pos,
            },
            Selector::Function { name, args, pos } => Term::Function {
                name,
                args: args
                    .into_iter()
                    .map(Self::selector_term)
                    .collect::<Option<Vec<_>>>()?,
                pos,
            },
            _ => return None,
        })
    }

    fn selector_terms(&self, items: Vec<Selector>, pos: usize) -> R<Vec<Term>> {
        items
            .into_iter()
            .map(Self::selector_term)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                self.invalid(
                    pos,
                    "collection, tuple and user type literals over columns in a select clause are not supported",
                )
            })
    }

    /// `selectionGroupWithoutField`.
    fn selector_primary(&mut self) -> R<Selector> {
        let pos = self.pos();
        if self.at_p("(") {
            if let Some(ty) = self.try_type_hint(|p, k| {
                p.can_start_selector_at(k) && !p.is_p_at(k, "-") && !p.is_p_at(k, "*")
            })? {
                self.enter()?;
                let inner = self.selector_group();
                self.leave();
                return match Self::selector_term(inner?) {
                    Some(term) => Ok(Selector::Term(Term::Cast {
                        ty,
                        term: Box::new(term),
                        pos,
                    })),
                    None => Err(self.invalid(
                        pos,
                        "type hints on columns in a select clause are not supported",
                    )),
                };
            }
            self.advance();
            let mut items = vec![self.selector()?];
            while self.eat_p(",") {
                items.push(self.selector()?);
            }
            self.expect_p(")")?;
            if items.len() == 1 {
                return Ok(items.remove(0));
            }
            let items = self.selector_terms(items, pos)?;
            return Ok(Selector::Term(Term::Tuple { items, pos }));
        }
        if self.eat_p("[") {
            let mut items = Vec::new();
            if !self.eat_p("]") {
                loop {
                    items.push(self.selector()?);
                    if self.eat_p("]") {
                        break;
                    }
                    if !self.eat_p(",") {
                        return Err(self.expected("',' or ']'"));
                    }
                }
            }
            let items = self.selector_terms(items, pos)?;
            return Ok(Selector::Term(Term::List { items, pos }));
        }
        if self.eat_p("{") {
            if self.eat_p("}") {
                return Ok(Selector::Term(Term::Map {
                    entries: Vec::new(),
                    pos,
                }));
            }
            let first = self.selector()?;
            if self.eat_p(":") {
                let mut entries = vec![(first, self.selector()?)];
                while self.eat_p(",") {
                    let k = self.selector()?;
                    self.expect_p(":")?;
                    entries.push((k, self.selector()?));
                }
                self.expect_p("}")?;
                // A user type value when every key is a bare name.
                if entries
                    .iter()
                    .all(|(k, _)| matches!(k, Selector::Column(_)))
                {
                    let mut fields = Vec::new();
                    for (k, v) in entries {
                        let Selector::Column(field) = k else { continue };
                        let v = self.selector_terms(vec![v], pos)?.remove(0);
                        fields.push((field, v));
                    }
                    return Ok(Selector::Term(Term::Udt { fields, pos }));
                }
                let mut out = Vec::new();
                for (k, v) in entries {
                    let mut kv = self.selector_terms(vec![k, v], pos)?;
                    let v = kv.remove(1);
                    out.push((kv.remove(0), v));
                }
                return Ok(Selector::Term(Term::Map { entries: out, pos }));
            }
            let mut items = vec![first];
            while self.eat_p(",") {
                items.push(self.selector()?);
            }
            self.expect_p("}")?;
            let items = self.selector_terms(items, pos)?;
            return Ok(Selector::Term(Term::Set { items, pos }));
        }
        if self.is_constant_at(0) {
            let value = self.constant()?;
            return Ok(Selector::Term(Term::Literal { value, pos }));
        }
        if self.at_kw("null") {
            self.advance();
            return Ok(Selector::Term(Term::Literal {
                value: Literal::Null,
                pos,
            }));
        }
        if self.is_marker_at(0) {
            return Ok(Selector::Term(Term::Bind(self.marker()?)));
        }
        if self.is_p_at(1, "(") {
            if self.at_kw("count") && self.is_p_at(2, "*") && self.is_p_at(3, ")") {
                let name = self.function_name()?;
                self.advance();
                let star = self.bump_pos();
                self.advance();
                return Ok(Selector::Function {
                    name,
                    args: vec![Selector::Star { pos: star }],
                    pos,
                });
            }
            for kw in ["writetime", "maxwritetime", "ttl"] {
                if self.at_kw(kw) {
                    self.advance();
                    self.advance();
                    let column = Selector::Column(self.name("a column name")?);
                    let column = Box::new(self.selector_modifiers(column)?);
                    self.expect_p(")")?;
                    return Ok(match kw {
                        "writetime" => Selector::WriteTime { column, pos },
                        "maxwritetime" => Selector::MaxWriteTime { column, pos },
                        _ => Selector::Ttl { column, pos },
                    });
                }
            }
            if self.at_kw("cast") {
                self.advance();
                self.advance();
                let selector = Box::new(self.selector()?);
                self.expect_kw("AS")?;
                let ty = TypeExpr::Native(self.native_type()?);
                self.expect_p(")")?;
                return Ok(Selector::Cast { selector, ty, pos });
            }
        }
        if self.is_call_at(0) {
            let name = self.function_name()?;
            self.expect_p("(")?;
            let mut args = Vec::new();
            if !self.eat_p(")") {
                loop {
                    args.push(self.selector()?);
                    if self.eat_p(")") {
                        break;
                    }
                    if !self.eat_p(",") {
                        return Err(self.expected("',' or ')'"));
                    }
                }
            }
            return Ok(Selector::Function { name, args, pos });
        }
        if self.is_name_at(0) {
            return Ok(Selector::Column(self.name("a column name")?));
        }
        Err(self.expected("a selector"))
    }

    // WHERE ----------------------------------------------------------------------

    fn where_clause(&mut self) -> R<Vec<Relation>> {
        let mut out = Vec::new();
        loop {
            self.relation(&mut out)?;
            if !self.eat_kw("AND") {
                return Ok(out);
            }
        }
    }

    fn relation_op(&mut self) -> Option<Operator> {
        let op = match self.text_of(self.tok()) {
            "=" => Operator::Eq,
            "<" => Operator::Lt,
            "<=" => Operator::Lte,
            ">" => Operator::Gt,
            ">=" => Operator::Gte,
            "!=" => Operator::Neq,
            _ => return None,
        };
        if self.tok().kind != Kind::Punct {
            return None;
        }
        self.advance();
        Some(op)
    }

    fn relation(&mut self, out: &mut Vec<Relation>) -> R<()> {
        self.enter()?;
        let r = self.relation_inner(out);
        self.leave();
        r
    }

    fn relation_inner(&mut self, out: &mut Vec<Relation>) -> R<()> {
        let pos = self.pos();
        if self.at_p("(") {
            let name_next = self.is_name_at(1) || self.nth(1).kind == Kind::EmptyQuoted;
            if name_next && (self.is_p_at(2, ",") || self.is_p_at(2, ")")) {
                let columns = self.tuple_of_identifiers()?;
                let target = RelationTarget::Columns(columns);
                let (op, value) = if self.eat_kw("IN") {
                    (Operator::In, self.multi_in_values()?)
                } else if let Some(op) = self.relation_op() {
                    let value = if self.is_marker_at(0) {
                        Term::Bind(self.marker()?)
                    } else {
                        self.tuple_literal()?
                    };
                    (op, value)
                } else {
                    return Err(self.expected("an operator"));
                };
                out.push(Relation {
                    target,
                    op,
                    value,
                    pos,
                });
                return Ok(());
            }
            self.advance();
            self.relation(out)?;
            self.expect_p(")")?;
            return Ok(());
        }
        if self.at_kw("token") && self.is_p_at(1, "(") {
            self.advance();
            let columns = self.tuple_of_identifiers()?;
            let Some(op) = self.relation_op() else {
                return Err(self.expected("a comparison operator"));
            };
            let value = self.term()?;
            out.push(Relation {
                target: RelationTarget::Token(columns),
                op,
                value,
                pos,
            });
            return Ok(());
        }
        if self.at_kw("expr") && self.is_p_at(1, "(") {
            self.advance();
            self.advance();
            self.qualified("an index name")?;
            self.expect_p(",")?;
            self.term()?;
            self.expect_p(")")?;
            return Err(self.invalid(
                pos,
                "custom index expressions (expr(...)) need a custom index, which is not supported",
            ));
        }
        let column = self.cident("a column name")?;
        if self.eat_p("[") {
            let key = self.term()?;
            self.expect_p("]")?;
            let Some(op) = self.relation_op() else {
                return Err(self.expected("a comparison operator"));
            };
            let value = self.term()?;
            out.push(Relation {
                target: RelationTarget::Element { column, key },
                op,
                value,
                pos,
            });
            return Ok(());
        }
        let (op, value) = if let Some(op) = self.relation_op() {
            (op, self.term()?)
        } else if self.eat_kw("LIKE") {
            (Operator::Like, self.term()?)
        } else if self.at_kw("IS") {
            self.advance();
            self.expect_kw("NOT")?;
            let npos = self.expect_kw("NULL")?;
            (
                Operator::IsNot,
                Term::Literal {
                    value: Literal::Null,
                    pos: npos,
                },
            )
        } else if self.eat_kw("IN") {
            (Operator::In, self.in_values()?)
        } else if self.eat_kw("CONTAINS") {
            if self.eat_kw("KEY") {
                (Operator::ContainsKey, self.term()?)
            } else {
                (Operator::Contains, self.term()?)
            }
        } else {
            return Err(self.expected("an operator"));
        };
        out.push(Relation {
            target: RelationTarget::Column(column),
            op,
            value,
            pos,
        });
        Ok(())
    }

    /// `(a, b, ...)` of column names.
    fn tuple_of_identifiers(&mut self) -> R<Vec<Name>> {
        self.expect_p("(")?;
        let mut out = vec![self.cident("a column name")?];
        while self.eat_p(",") {
            out.push(self.cident("a column name")?);
        }
        self.expect_p(")")?;
        Ok(out)
    }

    /// `(t, ...)`: always a tuple, even of one element.
    fn tuple_literal(&mut self) -> R<Term> {
        self.enter()?;
        let pos = self.expect_p("(");
        let out = pos.and_then(|pos| {
            let items = self.term_list(")")?;
            if items.is_empty() {
                return Err(self.syntax(pos, "expected a term inside '()'"));
            }
            Ok(Term::Tuple { items, pos })
        });
        self.leave();
        out
    }

    /// The candidates of a single-column IN: `(t, ...)` or a marker.
    fn in_values(&mut self) -> R<Term> {
        if self.is_marker_at(0) {
            return Ok(Term::Bind(self.marker()?));
        }
        let pos = self.expect_p("(")?;
        let items = self.term_list(")")?;
        Ok(Term::Tuple { items, pos })
    }

    /// The candidates of a multi-column IN: `()`, a marker, `((..), ...)` or
    /// `(?, ...)`.
    fn multi_in_values(&mut self) -> R<Term> {
        if self.is_marker_at(0) {
            return Ok(Term::Bind(self.marker()?));
        }
        let pos = self.expect_p("(")?;
        let mut items = Vec::new();
        if self.eat_p(")") {
            return Ok(Term::Tuple { items, pos });
        }
        let tuples = self.at_p("(");
        loop {
            items.push(if tuples {
                self.tuple_literal()?
            } else {
                Term::Bind(self.marker()?)
            });
            if self.eat_p(")") {
                return Ok(Term::Tuple { items, pos });
            }
            if !self.eat_p(",") {
                return Err(self.expected("',' or ')'"));
            }
        }
    }

    // INSERT, UPDATE, DELETE, BATCH ------------------------------------------------

    /// `USING TIMESTAMP x AND TTL y` in either order; the last of a kind wins,
    /// as in Cassandra.
    fn using(&mut self, ttl_allowed: bool) -> R<Using> {
        let mut using = Using::default();
        if !self.eat_kw("USING") {
            return Ok(using);
        }
        loop {
            if self.eat_kw("TIMESTAMP") {
                using.timestamp = Some(self.int_value()?);
            } else if ttl_allowed && self.eat_kw("TTL") {
                using.ttl = Some(self.int_value()?);
            } else {
                return Err(self.expected(if ttl_allowed {
                    "TIMESTAMP or TTL"
                } else {
                    "TIMESTAMP"
                }));
            }
            if !ttl_allowed || !self.eat_kw("AND") {
                return Ok(using);
            }
        }
    }

    fn insert(&mut self) -> R<Insert> {
        self.expect_kw("INSERT")?;
        self.expect_kw("INTO")?;
        let table = self.qualified("a table name")?;
        let values = if self.eat_kw("JSON") {
            let document = if self.tok().kind == Kind::Str {
                let pos = self.pos();
                Term::Literal {
                    value: self.constant()?,
                    pos,
                }
            } else if self.is_marker_at(0) {
                Term::Bind(self.marker()?)
            } else {
                return Err(self.expected("a JSON string or a bind marker"));
            };
            let default = if self.eat_kw("DEFAULT") {
                if self.eat_kw("UNSET") {
                    JsonDefault::Unset
                } else {
                    self.expect_kw("NULL")?;
                    JsonDefault::Null
                }
            } else {
                JsonDefault::Null
            };
            InsertValues::Json { document, default }
        } else {
            self.expect_p("(")?;
            let mut columns = vec![self.cident("a column name")?];
            while self.eat_p(",") {
                columns.push(self.cident("a column name")?);
            }
            self.expect_p(")")?;
            self.expect_kw("VALUES")?;
            self.expect_p("(")?;
            let mut values = vec![self.term()?];
            while self.eat_p(",") {
                values.push(self.term()?);
            }
            self.expect_p(")")?;
            InsertValues::Values { columns, values }
        };
        let if_not_exists = self.if_not_exists()?;
        let using = self.using(true)?;
        Ok(Insert {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    fn update(&mut self) -> R<Update> {
        self.expect_kw("UPDATE")?;
        let table = self.qualified("a table name")?;
        let using = self.using(true)?;
        self.expect_kw("SET")?;
        let mut assignments = vec![self.assignment()?];
        while self.eat_p(",") {
            assignments.push(self.assignment()?);
        }
        self.expect_kw("WHERE")?;
        let where_clause = self.where_clause()?;
        let conditions = self.conditions()?;
        Ok(Update {
            table,
            using,
            assignments,
            where_clause,
            conditions,
        })
    }

    /// One `SET` item (`columnOperation`).
    fn assignment(&mut self) -> R<Assignment> {
        let column = self.cident("a column name")?;
        if self.eat_p("+=") {
            return Ok(Assignment::Add {
                column,
                value: self.term()?,
            });
        }
        if self.eat_p("-=") {
            return Ok(Assignment::Subtract {
                column,
                value: self.term()?,
            });
        }
        if self.eat_p("[") {
            let key = self.term()?;
            self.expect_p("]")?;
            self.expect_p("=")?;
            return Ok(Assignment::SetElement {
                column,
                key,
                value: self.term()?,
            });
        }
        if self.eat_p(".") {
            let field = self.name("a field name")?;
            self.expect_p("=")?;
            return Ok(Assignment::SetField {
                column,
                field,
                value: self.term()?,
            });
        }
        if !self.at_p("=") {
            return Err(self.expected("'=', '+=', '-=', '[' or '.'"));
        }
        self.advance();
        let is_column =
            (self.is_name_at(0) || self.tok().kind == Kind::EmptyQuoted) && !self.is_call_at(0);
        if is_column {
            let other = self.cident("a column name")?;
            if other.text != column.text {
                return Err(self.syntax(
                    other.pos,
                    &format!(
                        "only expressions of the form {0} = {0} + <value> and {0} = {0} - <value> are supported",
                        column.text
                    ),
                ));
            }
            if self.eat_p("+") {
                return Ok(Assignment::Add {
                    column,
                    value: self.term()?,
                });
            }
            if self.eat_p("-") {
                return Ok(Assignment::Subtract {
                    column,
                    value: self.term()?,
                });
            }
            // `c = c -3`: the lexer reads `-3` as one integer (Cassandra's
            // production for it adds the negative number).
            if self.tok().kind == Kind::Integer && self.text_of(self.tok()).starts_with('-') {
                let pos = self.pos();
                let value = self.constant()?;
                return Ok(Assignment::Add {
                    column,
                    value: Term::Literal { value, pos },
                });
            }
            return Err(self.expected("'+' or '-'"));
        }
        let value = self.term()?;
        if self.at_p("+") && !self.can_start_term_at(1) {
            self.advance();
            let other = self.cident("a column name")?;
            if other.text != column.text {
                return Err(self.syntax(
                    other.pos,
                    &format!(
                        "only expressions of the form {0} = <value> + {0} are supported",
                        column.text
                    ),
                ));
            }
            return Ok(Assignment::Prepend { column, value });
        }
        Ok(Assignment::Set { column, value })
    }

    /// `IF EXISTS` or `IF condition AND ...` (UPDATE, DELETE).
    fn conditions(&mut self) -> R<Conditions> {
        if !self.eat_kw("IF") {
            return Ok(Conditions::None);
        }
        if self.at_kw("EXISTS") && !self.can_continue_condition_at(1) {
            self.advance();
            return Ok(Conditions::Exists);
        }
        let mut out = vec![self.condition()?];
        while self.eat_kw("AND") {
            out.push(self.condition()?);
        }
        Ok(Conditions::Columns(out))
    }

    /// After a column named `exists`: whether a condition continues (`IF exists = 1`).
    fn can_continue_condition_at(&self, k: usize) -> bool {
        let t = self.nth(k);
        (t.kind == Kind::Punct
            && ["=", "<", "<=", ">", ">=", "!=", "[", "."].contains(&self.text_of(t)))
            || self.is_kw_at(k, "IN")
            || self.is_kw_at(k, "CONTAINS")
    }

    fn condition(&mut self) -> R<Condition> {
        let pos = self.pos();
        let column = self.cident("a column name")?;
        let mut element = None;
        let mut field = None;
        let mut contains_allowed = true;
        if self.eat_p("[") {
            element = Some(self.term()?);
            self.expect_p("]")?;
            contains_allowed = false;
        } else if self.eat_p(".") {
            field = Some(self.name("a field name")?);
            contains_allowed = false;
        }
        let (op, value) = if let Some(op) = self.relation_op() {
            (op, self.term()?)
        } else if self.eat_kw("IN") {
            (Operator::In, self.in_values()?)
        } else if contains_allowed && self.eat_kw("CONTAINS") {
            if self.eat_kw("KEY") {
                (Operator::ContainsKey, self.term()?)
            } else {
                (Operator::Contains, self.term()?)
            }
        } else {
            return Err(self.expected("an operator"));
        };
        Ok(Condition {
            column,
            element,
            field,
            op,
            value,
            pos,
        })
    }

    fn delete(&mut self) -> R<Delete> {
        self.expect_kw("DELETE")?;
        let mut columns = Vec::new();
        if !self.at_kw("FROM") {
            loop {
                let column = self.cident("a column name")?;
                columns.push(if self.eat_p("[") {
                    let key = self.term()?;
                    self.expect_p("]")?;
                    Deletion::Element { column, key }
                } else if self.eat_p(".") {
                    Deletion::Field {
                        column,
                        field: self.name("a field name")?,
                    }
                } else {
                    Deletion::Column(column)
                });
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        self.expect_kw("FROM")?;
        let table = self.qualified("a table name")?;
        let using = self.using(false)?;
        self.expect_kw("WHERE")?;
        let where_clause = self.where_clause()?;
        let conditions = self.conditions()?;
        Ok(Delete {
            columns,
            table,
            using,
            where_clause,
            conditions,
        })
    }

    fn batch(&mut self) -> R<Batch> {
        self.expect_kw("BEGIN")?;
        let kind = if self.eat_kw("UNLOGGED") {
            BatchKind::Unlogged
        } else if self.eat_kw("COUNTER") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("BATCH")?;
        let using = self.using(true)?;
        let mut statements = Vec::new();
        loop {
            if self.at_kw("APPLY") {
                self.advance();
                self.expect_kw("BATCH")?;
                return Ok(Batch {
                    kind,
                    using,
                    statements,
                });
            }
            let s = if self.at_kw("INSERT") {
                BatchStatement::Insert(self.insert()?)
            } else if self.at_kw("UPDATE") {
                BatchStatement::Update(self.update()?)
            } else if self.at_kw("DELETE") {
                BatchStatement::Delete(self.delete()?)
            } else {
                return Err(self.expected("INSERT, UPDATE, DELETE or APPLY BATCH"));
            };
            statements.push(s);
            self.eat_p(";");
        }
    }

    // Schema ---------------------------------------------------------------------

    fn create(&mut self, pos: usize) -> R<Statement> {
        self.advance();
        if self.at_kw("KEYSPACE") || self.at_kw("SCHEMA") {
            self.what = "CREATE KEYSPACE";
            self.advance();
            let if_not_exists = self.if_not_exists()?;
            let name = self.keyspace_name()?;
            self.expect_kw("WITH")?;
            let settings = self.settings()?;
            return Ok(Statement::CreateKeyspace {
                if_not_exists,
                name,
                settings,
            });
        }
        if self.at_kw("TABLE") || self.at_kw("COLUMNFAMILY") {
            self.what = "CREATE TABLE";
            return Ok(Statement::CreateTable(Box::new(self.create_table(pos)?)));
        }
        if self.at_kw("TYPE") {
            self.what = "CREATE TYPE";
            self.advance();
            let if_not_exists = self.if_not_exists()?;
            let name = self.user_type_name()?;
            self.expect_p("(")?;
            let field = self.name("a field name")?;
            let mut fields = vec![(field, self.type_expr()?)];
            // `( ',' typeColumns? )*`: empty items between commas are allowed.
            loop {
                if self.eat_p(")") {
                    break;
                }
                self.expect_p(",")?;
                if !self.at_p(",") && !self.at_p(")") {
                    let field = self.name("a field name")?;
                    fields.push((field, self.type_expr()?));
                }
            }
            return Ok(Statement::CreateType {
                if_not_exists,
                name,
                fields,
            });
        }
        if self.at_kw("ROLE") {
            self.what = "CREATE ROLE";
            self.advance();
            let if_not_exists = self.if_not_exists()?;
            let name = self.role_name()?;
            let options = if self.eat_kw("WITH") {
                self.role_options()?
            } else {
                RoleOptions::default()
            };
            return Ok(Statement::CreateRole {
                if_not_exists,
                name,
                options,
            });
        }
        if self.at_kw("USER") {
            self.what = "CREATE USER";
            self.advance();
            let if_not_exists = self.if_not_exists()?;
            let name = self.plain_name("a user name")?;
            let mut options = self.user_options()?;
            options.login = Some(true);
            options.superuser.get_or_insert(false);
            return Ok(Statement::CreateRole {
                if_not_exists,
                name,
                options,
            });
        }
        let custom = self.eat_kw("CUSTOM");
        if self.at_kw("INDEX") {
            self.what = "CREATE INDEX";
            self.advance();
            self.if_not_exists()?;
            if !self.at_kw("ON") {
                self.name("an index name")?;
            }
            self.expect_kw("ON")?;
            self.qualified("a table name")?;
            self.expect_p("(")?;
            if !self.eat_p(")") {
                loop {
                    let wrapped = ["values", "keys", "entries", "full"]
                        .iter()
                        .any(|k| self.at_kw(k))
                        && self.is_p_at(1, "(");
                    if wrapped {
                        self.advance();
                        self.advance();
                        self.cident("a column name")?;
                        self.expect_p(")")?;
                    } else {
                        self.cident("a column name")?;
                    }
                    if self.eat_p(")") {
                        break;
                    }
                    self.expect_p(",")?;
                }
            }
            if self.eat_kw("USING") {
                if self.tok().kind != Kind::Str {
                    return Err(self.expected("an index class string"));
                }
                self.advance();
            }
            if self.eat_kw("WITH") {
                self.settings()?;
            }
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::CreateIndex,
                pos,
            });
        }
        if custom {
            return Err(self.expected("INDEX"));
        }
        if self.at_kw("MATERIALIZED") {
            self.what = "CREATE MATERIALIZED VIEW";
            self.advance();
            self.expect_kw("VIEW")?;
            self.if_not_exists()?;
            self.qualified("a view name")?;
            self.expect_kw("AS")?;
            self.expect_kw("SELECT")?;
            self.selection()?;
            self.expect_kw("FROM")?;
            self.qualified("a table name")?;
            if self.eat_kw("WHERE") {
                self.where_clause()?;
            }
            self.expect_kw("PRIMARY")?;
            self.expect_kw("KEY")?;
            self.primary_key_clause()?;
            if self.eat_kw("WITH") {
                loop {
                    if self.at_kw("CLUSTERING") && self.is_kw_at(1, "ORDER") {
                        self.clustering_order()?;
                    } else if self.at_kw("COMPACT") && self.is_kw_at(1, "STORAGE") {
                        return Err(self.syntax(
                            self.pos(),
                            "COMPACT STORAGE tables are not allowed starting with version 4.0",
                        ));
                    } else {
                        self.setting()?;
                    }
                    if !self.eat_kw("AND") {
                        break;
                    }
                }
            }
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::CreateMaterializedView,
                pos,
            });
        }
        if self.eat_kw("OR") {
            self.expect_kw("REPLACE")?;
            if !self.at_kw("FUNCTION") && !self.at_kw("AGGREGATE") {
                return Err(self.expected("FUNCTION or AGGREGATE"));
            }
        }
        if self.at_kw("FUNCTION") {
            self.what = "CREATE FUNCTION";
            self.advance();
            self.if_not_exists()?;
            self.function_name()?;
            self.expect_p("(")?;
            if !self.eat_p(")") {
                loop {
                    self.name("an argument name")?;
                    self.type_expr()?;
                    if self.eat_p(")") {
                        break;
                    }
                    self.expect_p(",")?;
                }
            }
            if self.eat_kw("RETURNS") {
                self.expect_kw("NULL")?;
            } else {
                self.expect_kw("CALLED")?;
            }
            self.expect_kw("ON")?;
            self.expect_kw("NULL")?;
            self.expect_kw("INPUT")?;
            self.expect_kw("RETURNS")?;
            self.type_expr()?;
            self.expect_kw("LANGUAGE")?;
            self.plain_name("a language name")?;
            self.expect_kw("AS")?;
            if self.tok().kind != Kind::Str {
                return Err(self.expected("the function body as a string"));
            }
            self.advance();
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::CreateFunction,
                pos,
            });
        }
        if self.at_kw("AGGREGATE") {
            self.what = "CREATE AGGREGATE";
            self.advance();
            self.if_not_exists()?;
            self.function_name()?;
            self.type_list()?;
            self.expect_kw("SFUNC")?;
            self.function_name_only()?;
            self.expect_kw("STYPE")?;
            self.type_expr()?;
            if self.eat_kw("FINALFUNC") {
                self.function_name_only()?;
            }
            if self.eat_kw("INITCOND") {
                self.term()?;
            }
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::CreateAggregate,
                pos,
            });
        }
        if self.at_kw("TRIGGER") {
            self.what = "CREATE TRIGGER";
            self.advance();
            self.if_not_exists()?;
            self.name("a trigger name")?;
            self.expect_kw("ON")?;
            self.qualified("a table name")?;
            self.expect_kw("USING")?;
            if self.tok().kind != Kind::Str {
                return Err(self.expected("a trigger class string"));
            }
            self.advance();
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::CreateTrigger,
                pos,
            });
        }
        Err(self.expected(
            "KEYSPACE, TABLE, TYPE, INDEX, MATERIALIZED VIEW, FUNCTION, AGGREGATE, TRIGGER, ROLE or USER",
        ))
    }

    /// `allowedFunctionName` alone (SFUNC, FINALFUNC).
    fn function_name_only(&mut self) -> R<Name> {
        if !self.is_function_name_at(0) {
            return Err(self.expected("a function name"));
        }
        let j = self.advance();
        Ok(self.name_of(&self.toks[j]))
    }

    /// `'(' [type (',' type)*] ')'`.
    fn type_list(&mut self) -> R<Vec<TypeExpr>> {
        self.expect_p("(")?;
        let mut out = Vec::new();
        if self.eat_p(")") {
            return Ok(out);
        }
        loop {
            out.push(self.type_expr()?);
            if self.eat_p(")") {
                return Ok(out);
            }
            self.expect_p(",")?;
        }
    }

    /// After `PRIMARY KEY`: `((a, b), c)`, `(a, c)` or `(a)`: the partition key
    /// and the clustering columns.
    fn primary_key_clause(&mut self) -> R<(Vec<Name>, Vec<Name>)> {
        self.expect_p("(")?;
        let mut partition = Vec::new();
        if self.eat_p("(") {
            partition.push(self.name("a partition key column")?);
            while self.eat_p(",") {
                partition.push(self.name("a partition key column")?);
            }
            self.expect_p(")")?;
        } else {
            partition.push(self.name("a partition key column")?);
        }
        let mut clustering = Vec::new();
        while self.eat_p(",") {
            clustering.push(self.name("a clustering column")?);
        }
        self.expect_p(")")?;
        Ok((partition, clustering))
    }

    /// `CLUSTERING ORDER BY (c ASC|DESC, ...)`.
    fn clustering_order(&mut self) -> R<Vec<Ordering>> {
        self.expect_kw("CLUSTERING")?;
        self.expect_kw("ORDER")?;
        self.expect_kw("BY")?;
        self.expect_p("(")?;
        let mut out = Vec::new();
        loop {
            let column = self.name("a clustering column")?;
            let descending = if self.eat_kw("DESC") {
                true
            } else if self.eat_kw("ASC") {
                false
            } else {
                return Err(self.expected("ASC or DESC"));
            };
            out.push(Ordering { column, descending });
            if self.eat_p(")") {
                return Ok(out);
            }
            self.expect_p(",")?;
        }
    }

    /// `MASKED WITH DEFAULT` / `MASKED WITH f(args)`, parsed whole and refused.
    fn refuse_mask(&mut self) -> R<()> {
        let pos = self.pos();
        self.expect_kw("MASKED")?;
        self.expect_kw("WITH")?;
        if !self.eat_kw("DEFAULT") {
            self.function_name()?;
            self.expect_p("(")?;
            self.term_list(")")?;
        }
        Err(self.invalid(pos, "column masks (MASKED WITH) are not supported"))
    }

    fn create_table(&mut self, start: usize) -> R<CreateTable> {
        self.advance();
        let if_not_exists = self.if_not_exists()?;
        let table = self.qualified("a table name")?;
        let mut ct = CreateTable {
            if_not_exists,
            table,
            columns: Vec::new(),
            partition_key: Vec::new(),
            clustering: Vec::new(),
            clustering_order: Vec::new(),
            compact_storage: false,
            settings: Vec::new(),
            text: String::new(),
        };
        let mut primary_key: Option<usize> = None;
        let table_name = ct.table.name.text.clone();
        let mut one_key = |_: &Self, pos: usize| -> R<()> {
            if primary_key.replace(pos).is_some() {
                // Cassandra's words (its typo included), so that clients
                // matching on them behave the same.
                return Err(CqlError {
                    kind: CqlErrorKind::Invalid,
                    message: format!(
                        "Multiple PRIMARY KEY specified for table '{table_name}' (exactly one \
                         required)"
                    ),
                    position: Some(pos),
                });
            }
            Ok(())
        };
        self.expect_p("(")?;
        loop {
            if self.at_kw("PRIMARY") {
                let pos = self.pos();
                self.advance();
                self.expect_kw("KEY")?;
                one_key(self, pos)?;
                let (partition, clustering) = self.primary_key_clause()?;
                ct.partition_key = partition;
                ct.clustering = clustering;
            } else {
                let name = self.name("a column name")?;
                let ty = self.type_expr()?;
                let is_static = self.eat_kw("STATIC");
                if self.at_kw("MASKED") {
                    self.refuse_mask()?;
                }
                let primary = if self.at_kw("PRIMARY") {
                    let pos = self.pos();
                    self.advance();
                    self.expect_kw("KEY")?;
                    one_key(self, pos)?;
                    true
                } else {
                    false
                };
                ct.columns.push(ColumnDefinition {
                    name,
                    ty,
                    is_static,
                    primary_key: primary,
                });
            }
            // `( ',' tableColumns? )*`: empty items between commas are allowed.
            loop {
                if self.eat_p(")") {
                    return self.table_options(ct, start);
                }
                if !self.eat_p(",") {
                    return Err(self.expected("',' or ')'"));
                }
                if !self.at_p(",") && !self.at_p(")") {
                    break;
                }
            }
        }
    }

    fn table_options(&mut self, mut ct: CreateTable, start: usize) -> R<CreateTable> {
        if self.eat_kw("WITH") {
            loop {
                if self.at_kw("CLUSTERING") && self.is_kw_at(1, "ORDER") {
                    let order = self.clustering_order()?;
                    ct.clustering_order.extend(order);
                } else if self.at_kw("COMPACT") && self.is_kw_at(1, "STORAGE") {
                    self.advance();
                    self.advance();
                    ct.compact_storage = true;
                } else {
                    ct.settings.push(self.setting()?);
                }
                if !self.eat_kw("AND") {
                    break;
                }
            }
        }
        let end = self.toks[self.i.saturating_sub(1)].end;
        ct.text = self.text[start..end.max(start)].to_string();
        Ok(ct)
    }

    fn alter(&mut self, pos: usize) -> R<Statement> {
        self.advance();
        if self.at_kw("KEYSPACE") || self.at_kw("SCHEMA") {
            self.what = "ALTER KEYSPACE";
            self.advance();
            let if_exists = self.if_exists()?;
            let name = self.keyspace_name()?;
            self.expect_kw("WITH")?;
            let settings = self.settings()?;
            return Ok(Statement::AlterKeyspace {
                if_exists,
                name,
                settings,
            });
        }
        if self.at_kw("TABLE") || self.at_kw("COLUMNFAMILY") {
            self.what = "ALTER TABLE";
            self.advance();
            return Ok(Statement::AlterTable(Box::new(self.alter_table()?)));
        }
        if self.at_kw("TYPE") {
            self.what = "ALTER TYPE";
            self.advance();
            let if_exists = self.if_exists()?;
            let name = self.user_type_name()?;
            let action = if self.eat_kw("ALTER") {
                let field = self.name("a field name")?;
                self.expect_kw("TYPE")?;
                AlterTypeAction::AlterField {
                    field,
                    ty: self.type_expr()?,
                }
            } else if self.eat_kw("ADD") {
                let if_not_exists = self.if_not_exists()?;
                let field = self.name("a field name")?;
                AlterTypeAction::Add {
                    if_not_exists,
                    field,
                    ty: self.type_expr()?,
                }
            } else if self.eat_kw("RENAME") {
                let if_exists = self.if_exists()?;
                AlterTypeAction::Rename {
                    if_exists,
                    renames: self.renames()?,
                }
            } else {
                return Err(self.expected("ALTER, ADD or RENAME"));
            };
            return Ok(Statement::AlterType {
                if_exists,
                name,
                action,
            });
        }
        if self.at_kw("ROLE") {
            self.what = "ALTER ROLE";
            self.advance();
            let if_exists = self.if_exists()?;
            let name = self.role_name()?;
            let options = if self.eat_kw("WITH") {
                self.role_options()?
            } else {
                RoleOptions::default()
            };
            return Ok(Statement::AlterRole {
                if_exists,
                name,
                options,
            });
        }
        if self.at_kw("USER") {
            self.what = "ALTER USER";
            self.advance();
            let if_exists = self.if_exists()?;
            let name = self.plain_name("a user name")?;
            let options = self.user_options()?;
            return Ok(Statement::AlterRole {
                if_exists,
                name,
                options,
            });
        }
        if self.at_kw("MATERIALIZED") {
            self.what = "ALTER MATERIALIZED VIEW";
            self.advance();
            self.expect_kw("VIEW")?;
            self.if_exists()?;
            self.qualified("a view name")?;
            self.expect_kw("WITH")?;
            self.settings()?;
            return Ok(Statement::Unsupported {
                feature: UnsupportedFeature::AlterMaterializedView,
                pos,
            });
        }
        Err(self.expected("KEYSPACE, TABLE, TYPE, MATERIALIZED VIEW, ROLE or USER"))
    }

    /// `a TO b (AND c TO d)*`.
    fn renames(&mut self) -> R<Vec<(Name, Name)>> {
        let mut out = Vec::new();
        loop {
            let from = self.name("a name")?;
            self.expect_kw("TO")?;
            out.push((from, self.name("a name")?));
            if !self.eat_kw("AND") {
                return Ok(out);
            }
        }
    }

    fn alter_table(&mut self) -> R<AlterTable> {
        let if_exists = self.if_exists()?;
        let table = self.qualified("a table name")?;
        let action = if self.at_kw("ALTER") {
            self.advance();
            if self.at_kw("IF") {
                self.if_exists()?;
                self.cident("a column name")?;
                return self.alter_mask();
            }
            let column = self.cident("a column name")?;
            if self.eat_kw("TYPE") {
                AlterTableAction::AlterType {
                    column,
                    ty: self.type_expr()?,
                }
            } else {
                return self.alter_mask();
            }
        } else if self.eat_kw("ADD") {
            let if_not_exists = self.if_not_exists()?;
            let mut columns = Vec::new();
            let parens = self.eat_p("(");
            loop {
                let name = self.name("a column name")?;
                let ty = self.type_expr()?;
                let is_static = self.eat_kw("STATIC");
                if self.at_kw("MASKED") {
                    self.refuse_mask()?;
                }
                columns.push(ColumnDefinition {
                    name,
                    ty,
                    is_static,
                    primary_key: false,
                });
                if !parens || !self.eat_p(",") {
                    break;
                }
            }
            if parens {
                self.expect_p(")")?;
            }
            AlterTableAction::Add {
                if_not_exists,
                columns,
            }
        } else if self.at_kw("DROP") && self.is_kw_at(1, "COMPACT") && self.is_kw_at(2, "STORAGE") {
            self.advance();
            self.advance();
            self.advance();
            AlterTableAction::DropCompactStorage
        } else if self.eat_kw("DROP") {
            let if_exists = self.if_exists()?;
            let mut columns = Vec::new();
            if self.eat_p("(") {
                columns.push(self.name("a column name")?);
                while self.eat_p(",") {
                    columns.push(self.name("a column name")?);
                }
                self.expect_p(")")?;
            } else {
                columns.push(self.name("a column name")?);
            }
            let timestamp = if self.eat_kw("USING") {
                self.expect_kw("TIMESTAMP")?;
                let t = self.tok();
                if t.kind != Kind::Integer {
                    return Err(self.expected("an integer timestamp"));
                }
                let Ok(ts) = self.text_of(t).parse::<i64>() else {
                    return Err(self.syntax(t.start, "timestamp out of the 64-bit range"));
                };
                self.advance();
                Some(ts)
            } else {
                None
            };
            AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp,
            }
        } else if self.eat_kw("RENAME") {
            let if_exists = self.if_exists()?;
            AlterTableAction::Rename {
                if_exists,
                renames: self.renames()?,
            }
        } else if self.eat_kw("WITH") {
            AlterTableAction::With {
                settings: self.settings()?,
            }
        } else {
            return Err(self.expected("ALTER, ADD, DROP, RENAME or WITH"));
        };
        Ok(AlterTable {
            if_exists,
            table,
            action,
        })
    }

    /// `ALTER [IF EXISTS] c (MASKED WITH ... | DROP MASKED)`, parsed and refused.
    fn alter_mask(&mut self) -> R<AlterTable> {
        let pos = self.pos();
        if self.at_kw("DROP") && self.is_kw_at(1, "MASKED") {
            self.advance();
            self.advance();
            return Err(self.invalid(pos, "column masks (MASKED WITH) are not supported"));
        }
        if self.at_kw("MASKED") {
            self.refuse_mask()?;
        }
        Err(self.expected("TYPE, MASKED WITH or DROP MASKED"))
    }

    fn drop(&mut self, pos: usize) -> R<Statement> {
        self.advance();
        let unsupported = |feature| Statement::Unsupported { feature, pos };
        if self.at_kw("KEYSPACE") || self.at_kw("SCHEMA") {
            self.what = "DROP KEYSPACE";
            self.advance();
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropKeyspace {
                if_exists,
                name: self.keyspace_name()?,
            });
        }
        if self.at_kw("TABLE") || self.at_kw("COLUMNFAMILY") {
            self.what = "DROP TABLE";
            self.advance();
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropTable {
                if_exists,
                table: self.qualified("a table name")?,
            });
        }
        if self.at_kw("TYPE") {
            self.what = "DROP TYPE";
            self.advance();
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropType {
                if_exists,
                name: self.user_type_name()?,
            });
        }
        if self.at_kw("ROLE") {
            self.what = "DROP ROLE";
            self.advance();
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropRole {
                if_exists,
                name: self.role_name()?,
            });
        }
        if self.at_kw("USER") {
            self.what = "DROP USER";
            self.advance();
            let if_exists = self.if_exists()?;
            return Ok(Statement::DropRole {
                if_exists,
                name: self.plain_name("a user name")?,
            });
        }
        if self.at_kw("INDEX") {
            self.what = "DROP INDEX";
            self.advance();
            self.if_exists()?;
            self.qualified("an index name")?;
            return Ok(unsupported(UnsupportedFeature::DropIndex));
        }
        if self.at_kw("MATERIALIZED") {
            self.what = "DROP MATERIALIZED VIEW";
            self.advance();
            self.expect_kw("VIEW")?;
            self.if_exists()?;
            self.qualified("a view name")?;
            return Ok(unsupported(UnsupportedFeature::DropMaterializedView));
        }
        if self.at_kw("FUNCTION") || self.at_kw("AGGREGATE") {
            let function = self.at_kw("FUNCTION");
            self.what = if function {
                "DROP FUNCTION"
            } else {
                "DROP AGGREGATE"
            };
            self.advance();
            self.if_exists()?;
            self.function_name()?;
            if self.at_p("(") {
                self.type_list()?;
            }
            return Ok(unsupported(if function {
                UnsupportedFeature::DropFunction
            } else {
                UnsupportedFeature::DropAggregate
            }));
        }
        if self.at_kw("TRIGGER") {
            self.what = "DROP TRIGGER";
            self.advance();
            self.if_exists()?;
            self.name("a trigger name")?;
            self.expect_kw("ON")?;
            self.qualified("a table name")?;
            return Ok(unsupported(UnsupportedFeature::DropTrigger));
        }
        if self.at_kw("IDENTITY") {
            self.what = "DROP IDENTITY";
            self.advance();
            self.if_exists()?;
            self.plain_name("an identity")?;
            return Ok(unsupported(UnsupportedFeature::Identity));
        }
        Err(self.expected(
            "KEYSPACE, TABLE, TYPE, INDEX, MATERIALIZED VIEW, FUNCTION, AGGREGATE, TRIGGER, ROLE, USER or IDENTITY",
        ))
    }

    // Roles and permissions -----------------------------------------------------------

    fn string(&mut self, what: &str) -> R<String> {
        let t = self.tok();
        if t.kind != Kind::Str {
            return Err(self.expected(what));
        }
        let s = t.value.clone().unwrap_or_default();
        self.advance();
        Ok(s)
    }

    fn boolean(&mut self) -> R<bool> {
        if self.eat_kw("true") {
            Ok(true)
        } else if self.eat_kw("false") {
            Ok(false)
        } else {
            Err(self.expected("true or false"))
        }
    }

    /// `roleOption (AND roleOption)*` of CREATE/ALTER ROLE.
    fn role_options(&mut self) -> R<RoleOptions> {
        let mut o = RoleOptions::default();
        loop {
            let pos = self.pos();
            let twice = |p: &Self, what: &str| p.syntax(pos, &format!("option {what} given twice"));
            if self.eat_kw("PASSWORD") {
                self.expect_p("=")?;
                if o.password
                    .replace(self.string("a password string")?)
                    .is_some()
                {
                    return Err(twice(self, "PASSWORD"));
                }
            } else if self.eat_kw("HASHED") {
                self.expect_kw("PASSWORD")?;
                self.expect_p("=")?;
                if o.hashed_password
                    .replace(self.string("a password hash string")?)
                    .is_some()
                {
                    return Err(twice(self, "HASHED PASSWORD"));
                }
            } else if self.eat_kw("OPTIONS") {
                self.expect_p("=")?;
                if !o.options.is_empty() {
                    return Err(twice(self, "OPTIONS"));
                }
                o.options = self.option_map()?;
            } else if self.eat_kw("SUPERUSER") {
                self.expect_p("=")?;
                if o.superuser.replace(self.boolean()?).is_some() {
                    return Err(twice(self, "SUPERUSER"));
                }
            } else if self.eat_kw("LOGIN") {
                self.expect_p("=")?;
                if o.login.replace(self.boolean()?).is_some() {
                    return Err(twice(self, "LOGIN"));
                }
            } else if self.eat_kw("ACCESS") {
                if self.eat_kw("FROM") {
                    if self.eat_kw("ALL") {
                        self.expect_kw("CIDRS")?;
                    } else {
                        self.expect_kw("CIDRS")?;
                        self.string_set()?;
                    }
                    return Err(
                        self.invalid(pos, "CIDR permissions (ACCESS FROM) are not supported")
                    );
                }
                self.expect_kw("TO")?;
                let dcs = if self.eat_kw("ALL") {
                    self.expect_kw("DATACENTERS")?;
                    Vec::new()
                } else {
                    self.expect_kw("DATACENTERS")?;
                    self.string_set()?
                };
                if o.datacenters.replace(dcs).is_some() {
                    return Err(twice(self, "ACCESS TO DATACENTERS"));
                }
            } else {
                return Err(
                    self.expected("PASSWORD, HASHED PASSWORD, LOGIN, SUPERUSER, OPTIONS or ACCESS")
                );
            }
            if !self.eat_kw("AND") {
                break;
            }
        }
        if o.password.is_some() && o.hashed_password.is_some() {
            return Err(self.syntax(
                self.pos(),
                "options 'password' and 'hashed password' are mutually exclusive",
            ));
        }
        Ok(o)
    }

    /// `{'a', 'b', ...}`, at least one.
    fn string_set(&mut self) -> R<Vec<String>> {
        self.expect_p("{")?;
        let mut out = vec![self.string("a string")?];
        while self.eat_p(",") {
            out.push(self.string("a string")?);
        }
        self.expect_p("}")?;
        Ok(out)
    }

    /// `{k: v, ...}` of constants, as their text (`convertPropertyMap`).
    fn option_map(&mut self) -> R<Vec<(String, String)>> {
        self.expect_p("{")?;
        let mut out: Vec<(String, String)> = Vec::new();
        if self.eat_p("}") {
            return Ok(out);
        }
        loop {
            let kpos = self.pos();
            let k = self.constant_text()?;
            self.expect_p(":")?;
            let v = self.constant_text()?;
            if out.iter().any(|(o, _)| *o == k) {
                return Err(self.syntax(kpos, &format!("multiple definition for property {k}")));
            }
            out.push((k, v));
            if self.eat_p("}") {
                return Ok(out);
            }
            self.expect_p(",")?;
        }
    }

    fn constant_text(&mut self) -> R<String> {
        if !self.is_constant_at(0) {
            return Err(self.expected("a constant"));
        }
        let t = self.tok();
        let s = match t.kind {
            Kind::Str => t.value.clone().unwrap_or_default(),
            _ => self.text_of(t).to_string(),
        };
        self.advance();
        Ok(s)
    }

    /// CREATE/ALTER USER's `[WITH [HASHED] PASSWORD '...'] [SUPERUSER|NOSUPERUSER]`.
    fn user_options(&mut self) -> R<RoleOptions> {
        let mut o = RoleOptions::default();
        if self.eat_kw("WITH") {
            if self.eat_kw("HASHED") {
                self.expect_kw("PASSWORD")?;
                o.hashed_password = Some(self.string("a password hash string")?);
            } else {
                self.expect_kw("PASSWORD")?;
                o.password = Some(self.string("a password string")?);
            }
        }
        if self.eat_kw("SUPERUSER") {
            o.superuser = Some(true);
        } else if self.eat_kw("NOSUPERUSER") {
            o.superuser = Some(false);
        }
        Ok(o)
    }

    fn permission_at(&self, k: usize) -> Option<Permission> {
        let w = self.word_at(k)?.to_ascii_lowercase();
        Some(match w.as_str() {
            "create" => Permission::Create,
            "alter" => Permission::Alter,
            "drop" => Permission::Drop,
            "select" => Permission::Select,
            "modify" => Permission::Modify,
            "authorize" => Permission::Authorize,
            "describe" => Permission::Describe,
            "execute" => Permission::Execute,
            "unmask" => Permission::Unmask,
            "select_masked" => Permission::SelectMasked,
            _ => return None,
        })
    }

    /// Whether `permissionOrAll` starts here (rather than a role name).
    fn at_permissions(&self) -> bool {
        if self.at_kw("ALL") {
            return self.is_kw_at(1, "PERMISSIONS")
                || self.is_kw_at(1, "ON")
                || self.is_kw_at(1, "OF")
                || self.is_kw_at(1, "NORECURSIVE")
                || self.nth(1).kind == Kind::Eof
                || self.is_p_at(1, ";");
        }
        match self.permission_at(0) {
            None => false,
            Some(Permission::Unmask | Permission::SelectMasked) => {
                self.is_p_at(1, ",")
                    || self.is_kw_at(1, "ON")
                    || self.is_kw_at(1, "PERMISSION")
                    || self.is_kw_at(1, "OF")
                    || self.is_kw_at(1, "NORECURSIVE")
                    || self.nth(1).kind == Kind::Eof
                    || self.is_p_at(1, ";")
            }
            Some(_) => true,
        }
    }

    fn permissions(&mut self) -> R<Vec<Permission>> {
        if self.eat_kw("ALL") {
            self.eat_kw("PERMISSIONS");
            return Ok(vec![Permission::All]);
        }
        let mut out = Vec::new();
        loop {
            let Some(p) = self.permission_at(0) else {
                return Err(self.expected("a permission"));
            };
            self.advance();
            self.eat_kw("PERMISSION");
            out.push(p);
            if !self.eat_p(",") {
                return Ok(out);
            }
        }
    }

    fn resource(&mut self) -> R<Resource> {
        if self.at_kw("ALL") {
            let next = self.word_at(1).map(str::to_ascii_lowercase);
            match next.as_deref() {
                Some("keyspaces") => {
                    self.advance();
                    self.advance();
                    return Ok(Resource::AllKeyspaces);
                }
                Some("roles") => {
                    self.advance();
                    self.advance();
                    return Ok(Resource::AllRoles);
                }
                Some("mbeans") => {
                    self.advance();
                    self.advance();
                    return Ok(Resource::AllMbeans);
                }
                Some("functions") => {
                    self.advance();
                    self.advance();
                    let keyspace = if self.eat_kw("IN") {
                        self.expect_kw("KEYSPACE")?;
                        Some(self.keyspace_name()?)
                    } else {
                        None
                    };
                    return Ok(Resource::AllFunctions { keyspace });
                }
                _ => {}
            }
        }
        if self.eat_kw("KEYSPACE") {
            return Ok(Resource::Keyspace(self.keyspace_name()?));
        }
        if self.at_kw("ROLE") && self.is_role_name_at(1) && !self.is_p_at(2, ".") {
            self.advance();
            return Ok(Resource::Role(self.role_name()?));
        }
        if self.at_kw("FUNCTION") && self.is_name_at(1) {
            self.advance();
            let name = self.function_name()?;
            let arg_types = self.type_list()?;
            return Ok(Resource::Function { name, arg_types });
        }
        if (self.at_kw("MBEAN") || self.at_kw("MBEANS")) && self.nth(1).kind == Kind::Str {
            self.advance();
            let name = self.string("an MBean name")?;
            if name.is_empty() {
                return Err(self.syntax(self.pos(), "empty JMX object name supplied"));
            }
            return Ok(Resource::Mbean(name));
        }
        if !self.eat_kw("TABLE") {
            self.eat_kw("COLUMNFAMILY");
        }
        Ok(Resource::Table(self.qualified("a table name")?))
    }

    fn grant_or_revoke(&mut self, grant: bool) -> R<Statement> {
        self.advance();
        if self.at_permissions() {
            let permissions = self.permissions()?;
            self.expect_kw("ON")?;
            let resource = self.resource()?;
            self.expect_kw(if grant { "TO" } else { "FROM" })?;
            let role = self.role_name()?;
            return Ok(if grant {
                Statement::GrantPermissions {
                    permissions,
                    resource,
                    grantee: role,
                }
            } else {
                Statement::RevokePermissions {
                    permissions,
                    resource,
                    revokee: role,
                }
            });
        }
        self.what = if grant { "GRANT ROLE" } else { "REVOKE ROLE" };
        let role = self.role_name()?;
        self.expect_kw(if grant { "TO" } else { "FROM" })?;
        let other = self.role_name()?;
        Ok(if grant {
            Statement::GrantRole {
                role,
                grantee: other,
            }
        } else {
            Statement::RevokeRole {
                role,
                revokee: other,
            }
        })
    }

    fn list(&mut self) -> R<Statement> {
        self.advance();
        if self.at_kw("USERS") {
            self.what = "LIST USERS";
            self.advance();
            return Ok(Statement::ListRoles {
                of: None,
                recursive: true,
                users: true,
            });
        }
        if self.at_kw("ROLES") {
            self.what = "LIST ROLES";
            self.advance();
            let of = if self.eat_kw("OF") {
                Some(self.role_name()?)
            } else {
                None
            };
            let recursive = !self.eat_kw("NORECURSIVE");
            return Ok(Statement::ListRoles {
                of,
                recursive,
                users: false,
            });
        }
        self.what = "LIST PERMISSIONS";
        if !self.at_kw("ALL") && self.permission_at(0).is_none() {
            return Err(self.expected("ROLES, USERS, ALL or a permission"));
        }
        let permissions = self.permissions()?;
        let resource = if self.eat_kw("ON") {
            Some(self.resource()?)
        } else {
            None
        };
        let of = if self.eat_kw("OF") {
            Some(self.role_name()?)
        } else {
            None
        };
        let recursive = !self.eat_kw("NORECURSIVE");
        Ok(Statement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        })
    }

    // DESCRIBE ---------------------------------------------------------------------

    fn describe_statement(&mut self) -> R<Describe> {
        let named = |p: &Self| p.is_name_at(1);
        let d = if self.at_kw("CLUSTER") {
            self.advance();
            Describe::Cluster
        } else if self.at_kw("FULL") {
            self.advance();
            self.expect_kw("SCHEMA")?;
            Describe::Schema { full: true }
        } else if self.eat_kw("SCHEMA") {
            Describe::Schema { full: false }
        } else if self.eat_kw("KEYSPACES") {
            Describe::Keyspaces
        } else if self.at_kw("KEYSPACE") || (self.at_kw("ONLY") && self.is_kw_at(1, "KEYSPACE")) {
            let only = self.eat_kw("ONLY");
            self.advance();
            let name = if self.is_name_at(0) {
                Some(self.keyspace_name()?)
            } else {
                None
            };
            Describe::Keyspace { name, only }
        } else if self.eat_kw("TABLES") {
            Describe::Tables
        } else if self.at_kw("TABLE") || self.at_kw("COLUMNFAMILY") {
            self.advance();
            Describe::Table(self.qualified("a table name")?)
        } else if self.eat_kw("INDEX") {
            Describe::Index(self.qualified("an index name")?)
        } else if self.eat_kw("MATERIALIZED") {
            self.expect_kw("VIEW")?;
            Describe::MaterializedView(self.qualified("a view name")?)
        } else if self.eat_kw("TYPES") {
            Describe::Types
        } else if self.at_kw("TYPE") && named(self) {
            self.advance();
            Describe::Type(self.user_type_name()?)
        } else if self.eat_kw("FUNCTIONS") {
            Describe::Functions
        } else if self.at_kw("FUNCTION") && named(self) {
            self.advance();
            Describe::Function(self.function_name()?)
        } else if self.eat_kw("AGGREGATES") {
            Describe::Aggregates
        } else if self.at_kw("AGGREGATE") && named(self) {
            self.advance();
            Describe::Aggregate(self.function_name()?)
        } else {
            Describe::Generic(self.qualified("a name to describe")?)
        };
        if self.at_kw("WITH") {
            let pos = self.pos();
            self.advance();
            self.expect_kw("INTERNALS")?;
            return Err(self.invalid(pos, "DESCRIBE ... WITH INTERNALS is not supported"));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
