//! CQL data definition: the `CREATE TABLE` statement and the `WITH` settings
//! clause (`name = value AND ...`) shared by CREATE TABLE, `--table-options`
//! and ALTER. DML (INSERT, UPDATE, DELETE, SELECT) will sit beside it.
//!
//! Owns the syntax only: [`parse_create_table`] returns what the statement says
//! ([`CreateTable`]); `schema` checks it against itself (columns defined once,
//! keys that exist, ...) and builds the `TableSchema`; `options` turns the
//! settings into validated `TableOptions`. Also the inverse for names: which
//! identifiers a printer must quote ([`cql_name`]). Pure, any thread.
//!
//! Invariants:
//! 1. A syntax error in a statement is `Error::Cql` of kind `SyntaxError`
//!    carrying the byte offset ("CREATE TABLE: syntax error at byte 38: ...").
//! 2. Unquoted names fold to lower case and double-quoted ones keep theirs, as
//!    in CQL; both spellings are kept for messages about collisions.
//! 3. A syntax error inside a setting is an option error naming the option and
//!    the byte (`Error::InvalidOption`, "syntax error at byte N: ..."), so the
//!    operator sees which option to fix; `Error::cql_kind` maps it to
//!    `ConfigError`, as Cassandra answers a bad table option.

use super::error::CqlError;
use super::lexer::{Lexer, SyntaxError, Tok};
use super::literal::{parse_map, scalar, Literal};
use crate::error::{Error, Result};
use crate::types::CqlType;

// ---------------------------------------------------------------------------
// WITH settings
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
    let (t, name_pos) = lex.next_tok().map_err(|e| syntax("WITH", e))?;
    let name = match t {
        Tok::Ident(s) => s.to_ascii_lowercase(),
        t => {
            return Err(syntax(
                "WITH",
                SyntaxError {
                    pos: name_pos,
                    msg: format!("expected an option name, found {}", t.describe()),
                },
            ))
        }
    };
    lex.expect_punct('=').map_err(|e| syntax(&name, e))?;
    let (t, value_pos) = lex.next_tok().map_err(|e| syntax(&name, e))?;
    let value = match t {
        Tok::Punct('{') => Literal::Map(parse_map(lex).map_err(|e| syntax(&name, e))?),
        t => Literal::Scalar(scalar(t, value_pos).map_err(|e| syntax(&name, e))?),
    };
    Ok(Setting {
        name,
        name_pos,
        value,
        value_pos,
    })
}

// ---------------------------------------------------------------------------
// CREATE TABLE
// ---------------------------------------------------------------------------

/// CQL keywords that must be quoted to be used as names (the subset a DDL printer
/// can meet; quoting a non-reserved name is harmless).
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
    "key",
    "keyspace",
    "limit",
    "materialized",
    "mbean",
    "mbeans",
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
    "replace",
    "revoke",
    "schema",
    "select",
    "set",
    "static",
    "table",
    "to",
    "token",
    "truncate",
    "unlogged",
    "unset",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

/// A name as CQL needs it written: bare if it reads back unchanged, else in double quotes.
pub fn cql_name(name: &str) -> String {
    let bare = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && !RESERVED.contains(&name);
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A syntax error in a CREATE TABLE: the structured CQL error (invariant 1).
fn ddl_error(e: SyntaxError) -> Error {
    Error::Cql(CqlError::syntax("CREATE TABLE", e.pos, &e.msg))
}

/// A name token: unquoted identifiers fold to lower case, double-quoted ones keep theirs.
fn parse_name(
    lex: &mut Lexer<'_>,
    what: &str,
) -> std::result::Result<(String, usize), SyntaxError> {
    parse_name_spelled(lex, what).map(|(name, pos, _)| (name, pos))
}

/// As [`parse_name`], also returning the name as written (quotes included), for
/// messages about two spellings of one name.
fn parse_name_spelled(
    lex: &mut Lexer<'_>,
    what: &str,
) -> std::result::Result<(String, usize, String), SyntaxError> {
    let (t, pos) = lex.next_tok()?;
    match t {
        Tok::Ident(s) => Ok((s.to_ascii_lowercase(), pos, s)),
        Tok::Str { text, double: true } => {
            let spelled = format!("\"{}\"", text.replace('"', "\"\""));
            Ok((text, pos, spelled))
        }
        t => Err(SyntaxError {
            pos,
            msg: format!("expected {what}, found {}", t.describe()),
        }),
    }
}

/// What the statement says, before it is checked against itself.
/// Checking it against itself and building the schema is `schema`'s
/// (`TableSchema::from_cql`); positions are byte offsets for its messages.
pub(crate) struct CreateTable {
    pub if_not_exists: bool,
    pub keyspace: Option<String>,
    pub name: String,
    /// (name, type, static, inline PRIMARY KEY, position)
    pub columns: Vec<(String, CqlType, bool, bool, usize)>,
    /// Each column's name as written, in `columns` order.
    pub spellings: Vec<String>,
    pub partition_key: Vec<(String, usize)>,
    pub clustering: Vec<(String, usize)>,
    pub primary_key_clauses: usize,
    /// (clustering column, descending, position)
    pub order: Vec<(String, bool, usize)>,
    pub settings: Vec<Setting>,
}

/// Parses a CREATE TABLE statement's syntax (invariants 1 and 2).
pub(crate) fn parse_create_table(text: &str) -> Result<CreateTable> {
    let mut lex = Lexer::new(text);
    let ddl = |e| ddl_error(e);
    lex.expect_keyword("CREATE").map_err(ddl)?;
    if !lex.eat_keyword("TABLE").map_err(ddl)? {
        lex.expect_keyword("COLUMNFAMILY").map_err(ddl)?;
    }
    let if_not_exists = lex.eat_keyword("IF").map_err(ddl)?;
    if if_not_exists {
        lex.expect_keyword("NOT").map_err(ddl)?;
        lex.expect_keyword("EXISTS").map_err(ddl)?;
    }
    let (first, _) = parse_name(&mut lex, "a table name").map_err(ddl)?;
    let (keyspace, name) = if lex.eat_punct('.').map_err(ddl)? {
        (
            Some(first),
            parse_name(&mut lex, "a table name").map_err(ddl)?.0,
        )
    } else {
        (None, first)
    };
    let mut ct = CreateTable {
        if_not_exists,
        keyspace,
        name,
        columns: Vec::new(),
        spellings: Vec::new(),
        partition_key: Vec::new(),
        clustering: Vec::new(),
        primary_key_clauses: 0,
        order: Vec::new(),
        settings: Vec::new(),
    };
    lex.expect_punct('(').map_err(ddl)?;
    loop {
        if lex.peek().map_err(ddl)?.0.is_keyword("PRIMARY") {
            lex.next_tok().map_err(ddl)?;
            lex.expect_keyword("KEY").map_err(ddl)?;
            parse_primary_key(&mut lex, &mut ct).map_err(ddl)?;
        } else {
            let (col, pos, spelled) = parse_name_spelled(&mut lex, "a column name").map_err(ddl)?;
            let (t, type_pos) = lex.next_tok().map_err(ddl)?;
            let Tok::Ident(type_name) = t else {
                return Err(ddl(SyntaxError {
                    pos: type_pos,
                    msg: format!("expected a type, found {}", t.describe()),
                }));
            };
            if lex.peek().map_err(ddl)?.0 == Tok::Punct('<') {
                return Err(Error::InvalidInput(format!(
                    "CREATE TABLE: column '{col}' at byte {type_pos}: collection and frozen types are not supported yet"
                )));
            }
            let ty = CqlType::parse(&type_name)
                .map_err(|_| Error::InvalidInput(format!("CREATE TABLE: unknown type '{type_name}' for column '{col}' at byte {type_pos}")))?;
            let is_static = lex.eat_keyword("STATIC").map_err(ddl)?;
            let inline_pk = if lex.eat_keyword("PRIMARY").map_err(ddl)? {
                lex.expect_keyword("KEY").map_err(ddl)?;
                ct.primary_key_clauses += 1;
                ct.partition_key.push((col.clone(), pos));
                true
            } else {
                false
            };
            ct.columns.push((col, ty, is_static, inline_pk, pos));
            ct.spellings.push(spelled);
        }
        let (t, pos) = lex.next_tok().map_err(ddl)?;
        match t {
            Tok::Punct(',') => {
                // Tolerate a trailing comma before ')'.
                if lex.eat_punct(')').map_err(ddl)? {
                    break;
                }
            }
            Tok::Punct(')') => break,
            t => {
                return Err(ddl(SyntaxError {
                    pos,
                    msg: format!("expected ',' or ')', found {}", t.describe()),
                }))
            }
        }
    }
    if lex.eat_keyword("WITH").map_err(ddl)? {
        loop {
            if lex.peek().map_err(ddl)?.0.is_keyword("CLUSTERING") {
                lex.next_tok().map_err(ddl)?;
                lex.expect_keyword("ORDER").map_err(ddl)?;
                lex.expect_keyword("BY").map_err(ddl)?;
                lex.expect_punct('(').map_err(ddl)?;
                loop {
                    let (col, pos) = parse_name(&mut lex, "a clustering column").map_err(ddl)?;
                    let descending = lex.eat_keyword("DESC").map_err(ddl)?;
                    if !descending {
                        lex.eat_keyword("ASC").map_err(ddl)?;
                    }
                    ct.order.push((col, descending, pos));
                    if !lex.eat_punct(',').map_err(ddl)? {
                        break;
                    }
                }
                lex.expect_punct(')').map_err(ddl)?;
            } else if lex.peek().map_err(ddl)?.0.is_keyword("COMPACT") {
                let pos = lex.peek().map_err(ddl)?.1;
                return Err(Error::InvalidInput(format!(
                    "CREATE TABLE: COMPACT STORAGE (at byte {pos}) is not supported"
                )));
            } else {
                ct.settings.push(parse_setting(&mut lex)?);
            }
            if !lex.eat_keyword("AND").map_err(ddl)? {
                break;
            }
        }
    }
    lex.eat_punct(';').map_err(ddl)?;
    let (t, pos) = lex.next_tok().map_err(ddl)?;
    if t != Tok::Eof {
        return Err(ddl(SyntaxError {
            pos,
            msg: format!("expected end of statement, found {}", t.describe()),
        }));
    }
    Ok(ct)
}

/// After `PRIMARY KEY`: `((a, b), c, d)`, `(a, c)` or `(a)`.
fn parse_primary_key(
    lex: &mut Lexer<'_>,
    ct: &mut CreateTable,
) -> std::result::Result<(), SyntaxError> {
    ct.primary_key_clauses += 1;
    lex.expect_punct('(')?;
    if lex.eat_punct('(')? {
        loop {
            ct.partition_key
                .push(parse_name(lex, "a partition key column")?);
            if !lex.eat_punct(',')? {
                break;
            }
        }
        lex.expect_punct(')')?;
    } else {
        ct.partition_key
            .push(parse_name(lex, "a partition key column")?);
    }
    while lex.eat_punct(',')? {
        ct.clustering.push(parse_name(lex, "a clustering column")?);
    }
    lex.expect_punct(')')?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_unless_double_quoted_and_keep_their_spelling() {
        let ct = parse_create_table(
            "CREATE TABLE Ks.\"Tab\" (K int, \"V\" text, PRIMARY KEY ((K), \"V\")) WITH gc_grace_seconds = 5",
        )
        .unwrap();
        assert_eq!(
            (ct.keyspace.as_deref(), ct.name.as_str()),
            (Some("ks"), "Tab")
        );
        let names: Vec<&str> = ct.columns.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["k", "V"]);
        assert_eq!(ct.spellings, ["K", "\"V\""]);
        assert_eq!(ct.partition_key, [("k".to_string(), 54)]);
        assert_eq!(ct.clustering, [("V".to_string(), 58)]);
        assert_eq!(ct.settings.len(), 1);
        assert_eq!(ct.settings[0].name, "gc_grace_seconds");
    }

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

    #[test]
    fn printed_names_read_back_as_the_same_name() {
        for (name, shown) in [
            ("v", "v"),
            ("V", "\"V\""),
            ("select", "\"select\""),
            ("a\"b", "\"a\"\"b\""),
            ("1x", "\"1x\""),
        ] {
            assert_eq!(cql_name(name), shown);
            let back = parse_name(&mut Lexer::new(shown), "a name").unwrap().0;
            assert_eq!(back, name, "{shown}");
        }
    }
}
