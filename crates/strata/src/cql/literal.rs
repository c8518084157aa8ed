//! CQL literals: a value of a CQL type from its text (`42`, `'text'` contents,
//! `0xcafe`, `2024-05-01T10:00:00Z`, `1.50`, UUIDs, addresses) and the option
//! literals of a `WITH` clause (scalars and `{key: value}` maps).
//!
//! Owns parsing only: the types, their text form when printed
//! (`types::format_value`) and their bytes stay in `types`. Pure, any thread.
//!
//! Invariants:
//! 1. `parse_value(ty, &format_value(v)) == v` for every value `v` of type
//!    `ty` (for floats bit-equal, every NaN parsing as the canonical NaN):
//!    `types` invariant 2, checked by its property tests.
//! 2. No text can cause a panic: malformed text is `Error::InvalidInput` naming
//!    the type and the problem ("invalid decimal value '1..5': ...").
//! 3. An option map keeps every key once: a key given twice is a syntax error at
//!    the second one, not a silent overwrite.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::ast::{Literal as Constant, Term};
use super::lexer::{quote, Lexer, SyntaxError, Tok};
use crate::error::Result;
use crate::types::{
    days_from_civil, days_in_month, digits_to_magnitude, invalid, parse_hex, split_sign,
    varint_from_sign_magnitude, CqlType, Value, DATE_EPOCH, MILLIS_PER_DAY,
};

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

pub(crate) fn parse_varint(text: &str) -> Result<Vec<u8>> {
    let (neg, digits) = split_sign(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(
            &CqlType::Varint,
            text,
            "expected a decimal integer",
        ));
    }
    Ok(varint_from_sign_magnitude(
        neg,
        &digits_to_magnitude(digits.as_bytes()),
    ))
}

fn parse_decimal(text: &str) -> Result<Value> {
    let bad = |why: &str| invalid(&CqlType::Decimal, text, why);
    let (neg, rest) = split_sign(text);
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => {
            let e = &rest[i + 1..];
            let e_digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if e_digits.is_empty() || !e_digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("malformed exponent"));
            }
            let exp: i64 = e.parse().map_err(|_| bad("exponent out of range"))?;
            (&rest[..i], exp)
        }
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int_part.len() + frac_part.len() == 0 || !all_digits(int_part) || !all_digits(frac_part) {
        return Err(bad("expected digits with an optional '.' and exponent"));
    }
    let scale = (frac_part.len() as i64)
        .checked_sub(exp)
        .and_then(|s| i32::try_from(s).ok())
        .ok_or_else(|| bad("scale out of the 32-bit range"))?;
    let mut digits = Vec::with_capacity(int_part.len() + frac_part.len());
    digits.extend_from_slice(int_part.as_bytes());
    digits.extend_from_slice(frac_part.as_bytes());
    Ok(Value::Decimal {
        scale,
        unscaled: varint_from_sign_magnitude(neg, &digits_to_magnitude(&digits)),
    })
}

fn fixed_digits(s: &str, n: usize) -> Option<u32> {
    if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Parses `[-]Y+-MM-DD` into days since the epoch.
fn parse_ymd(s: &str) -> Option<i64> {
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let mut parts = rest.splitn(3, '-');
    let (ys, ms, ds) = (parts.next()?, parts.next()?, parts.next()?);
    if ys.is_empty() || ys.len() > 9 || !ys.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: i64 = ys.parse().ok()?;
    let y = if neg { -y } else { y };
    let m = fixed_digits(ms, 2)?;
    let d = fixed_digits(ds, 2)?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

fn parse_date(text: &str) -> Result<u32> {
    let bad = |why: &str| invalid(&CqlType::Date, text, why);
    // Cassandra also accepts the raw unsigned day number.
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<u32>()
            .map_err(|_| bad("raw day number out of the unsigned 32-bit range"));
    }
    let days = parse_ymd(text).ok_or_else(|| bad("expected YYYY-MM-DD"))?;
    // Cassandra's text form takes the signed 32-bit day range but its last
    // day (-5877641-06-23 is taken, 5881580-07-11 refused).
    if days < i64::from(i32::MIN) || days >= i64::from(i32::MAX) {
        return Err(bad("date out of range"));
    }
    u32::try_from(days + DATE_EPOCH).map_err(|_| bad("date out of range"))
}

fn parse_timestamp(text: &str) -> Result<i64> {
    let bad = || {
        invalid(
            &CqlType::Timestamp,
            text,
            "expected integer milliseconds or YYYY-MM-DD[THH:MM[:SS[.fff]]][Z]",
        )
    };
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    // A zone offset at the end (`+0000`, `-05:30`, `Z`), as Cassandra's
    // formats take: the time is converted to UTC.
    let (s, offset_seconds) = split_zone(text).ok_or_else(bad)?;
    // The date part ends at 'T' or ' '; a leading '-' belongs to a negative year.
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let days = parse_ymd(date).ok_or_else(bad)?;
    let mut ms_of_day = 0i64;
    if let Some(time) = time {
        let (hms, frac) = match time.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (time, None),
        };
        let mut parts = hms.split(':');
        let h = parts
            .next()
            .and_then(|p| fixed_digits(p, 2))
            .ok_or_else(bad)?;
        let mi = parts
            .next()
            .and_then(|p| fixed_digits(p, 2))
            .ok_or_else(bad)?;
        let sec = match parts.next() {
            Some(p) => fixed_digits(p, 2).ok_or_else(bad)?,
            None if frac.is_none() => 0,
            None => return Err(bad()),
        };
        if parts.next().is_some() || h > 23 || mi > 59 || sec > 59 {
            return Err(bad());
        }
        let millis = match frac {
            Some(f) if (1..=3).contains(&f.len()) && f.bytes().all(|b| b.is_ascii_digit()) => {
                // ".5" is 500 ms.
                f.parse::<u32>().map_err(|_| bad())? * 10u32.pow(3 - f.len() as u32)
            }
            Some(_) => return Err(bad()),
            None => 0,
        };
        ms_of_day =
            ((i64::from(h) * 60 + i64::from(mi)) * 60 + i64::from(sec)) * 1000 + i64::from(millis);
    }
    days.checked_mul(MILLIS_PER_DAY)
        .and_then(|v| v.checked_add(ms_of_day))
        .and_then(|v| v.checked_sub(offset_seconds * 1000))
        .ok_or_else(|| {
            invalid(
                &CqlType::Timestamp,
                text,
                "out of the 64-bit millisecond range",
            )
        })
}

/// Splits a timestamp's trailing zone off: `Z`, `+HHMM`, `+HH:MM`, `+HH`
/// (and `-`). Returns the rest and the offset east of UTC in seconds; `None`
/// for a malformed zone. A `-` that is part of the date is not a zone: the
/// zone can only follow a time (`HH:MM`).
fn split_zone(text: &str) -> Option<(&str, i64)> {
    if let Some(rest) = text.strip_suffix(['Z', 'z']) {
        return Some((rest, 0));
    }
    let Some(colon) = text.find(':') else {
        return Some((text, 0));
    };
    let tail = &text[colon..];
    let Some(at) = tail.find(['+', '-']) else {
        return Some((text, 0));
    };
    let at = colon + at;
    let (rest, zone) = text.split_at(at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (
            digits[..2].parse::<i64>().ok()?,
            digits[2..].parse::<i64>().ok()?,
        ),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some((rest.trim_end(), sign * (h * 3600 + m * 60)))
}

fn parse_uuid(ty: &CqlType, text: &str) -> Result<[u8; 16]> {
    let b = text.as_bytes();
    let bad = || invalid(ty, text, "expected 8-4-4-4-12 hexadecimal digits");
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return Err(bad());
    }
    let mut out = [0u8; 16];
    let groups = [
        (0, 8, 0),
        (9, 13, 4),
        (14, 18, 6),
        (19, 23, 8),
        (24, 36, 10),
    ];
    for (start, end, at) in groups {
        parse_hex(&b[start..end], &mut out[at..at + (end - start) / 2]).ok_or_else(bad)?;
    }
    if *ty == CqlType::TimeUuid && out[6] >> 4 != 1 {
        return Err(invalid(ty, text, "a timeuuid must be a version 1 UUID"));
    }
    Ok(out)
}

fn parse_int<T: std::str::FromStr>(ty: &CqlType, text: &str, min: i64, max: i64) -> Result<T> {
    text.parse::<T>().map_err(|_| {
        let digits = split_sign(text).1;
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            invalid(ty, text, &format!("out of range [{min}, {max}]"))
        } else {
            invalid(ty, text, "expected an integer")
        }
    })
}

/// Parses CQL literal-ish text as a value of `ty` (the inverse of
/// [`crate::types::format_value`], invariant 1).
pub fn parse_value(ty: &CqlType, text: &str) -> Result<Value> {
    Ok(match ty {
        CqlType::Boolean => {
            if text.eq_ignore_ascii_case("true") {
                Value::Boolean(true)
            } else if text.eq_ignore_ascii_case("false") {
                Value::Boolean(false)
            } else {
                return Err(invalid(ty, text, "expected true or false"));
            }
        }
        CqlType::TinyInt => Value::TinyInt(parse_int(ty, text, i8::MIN.into(), i8::MAX.into())?),
        CqlType::SmallInt => {
            Value::SmallInt(parse_int(ty, text, i16::MIN.into(), i16::MAX.into())?)
        }
        CqlType::Int => Value::Int(parse_int(ty, text, i32::MIN.into(), i32::MAX.into())?),
        CqlType::BigInt => Value::BigInt(parse_int(ty, text, i64::MIN, i64::MAX)?),
        CqlType::Float => Value::Float(
            text.parse()
                .map_err(|_| invalid(ty, text, "expected a number, NaN or Infinity"))?,
        ),
        CqlType::Double => Value::Double(
            text.parse()
                .map_err(|_| invalid(ty, text, "expected a number, NaN or Infinity"))?,
        ),
        CqlType::Text => Value::Text(text.to_string()),
        CqlType::Ascii => {
            if !text.is_ascii() {
                return Err(invalid(ty, text, "contains non-ASCII characters"));
            }
            Value::Ascii(text.to_string())
        }
        CqlType::Blob => {
            let hex = text
                .strip_prefix("0x")
                .or_else(|| text.strip_prefix("0X"))
                .ok_or_else(|| invalid(ty, text, "expected 0x followed by hex digits"))?;
            let mut out = vec![0u8; hex.len() / 2];
            parse_hex(hex.as_bytes(), &mut out)
                .ok_or_else(|| invalid(ty, text, "expected an even number of hex digits"))?;
            Value::Blob(out)
        }
        CqlType::Uuid => Value::Uuid(parse_uuid(ty, text)?),
        CqlType::TimeUuid => Value::TimeUuid(parse_uuid(ty, text)?),
        CqlType::Timestamp => Value::Timestamp(parse_timestamp(text)?),
        CqlType::Date => Value::Date(parse_date(text)?),
        CqlType::Varint => Value::Varint(parse_varint(text)?),
        CqlType::Decimal => parse_decimal(text)?,
        CqlType::Inet => {
            let ip: IpAddr = text
                .parse()
                .map_err(|_| invalid(ty, text, "expected an IPv4 or IPv6 address"))?;
            Value::Inet(match ip {
                IpAddr::V4(a) => a.octets().to_vec(),
                IpAddr::V6(a) => a.octets().to_vec(),
            })
        }
        CqlType::Time => Value::Time(crate::types::temporal::parse_time(text)?),
        CqlType::Duration => {
            let (months, days, nanos) = crate::types::temporal::parse_duration(text)?;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        CqlType::Counter => Value::Counter(parse_int(ty, text, i64::MIN, i64::MAX)?),
        composite => {
            let term = super::parser::parse_term(text)
                .map_err(|e| invalid(composite, text, &e.message))?;
            term_value(composite, &term).map_err(|why| invalid(composite, text, &why))?
        }
    })
}

/// A literal term as a value of `ty`: a constant, or a collection, tuple,
/// UDT or vector literal of constants ([`composite_literal`]). Bind markers
/// and functions are not literals (the executor evaluates those); `Err` is
/// the reason, for the caller's message.
pub fn term_value(ty: &CqlType, term: &Term) -> std::result::Result<Value, String> {
    let term = term.ungrouped(matches!(ty, CqlType::Tuple(_)));
    match term {
        Term::List { .. }
        | Term::Set { .. }
        | Term::Map { .. }
        | Term::Tuple { .. }
        | Term::Udt { .. } => composite_literal(
            term,
            ty,
            "value",
            &mut |t, ty| match t {
                Term::Literal {
                    value: Constant::Null,
                    ..
                } => Ok(Bound::Null),
                t => term_value(ty, t).map(Bound::Value),
            },
            &|m| m,
        ),
        Term::Literal { value, .. } if ty.is_native() && *value != Constant::Null => {
            parse_value(ty, &constant_text(value)).map_err(|e| e.to_string())
        }
        Term::Negate { term, .. } if ty.is_native() => match &**term {
            Term::Literal {
                value: Constant::Integer(n) | Constant::Float(n),
                ..
            } => parse_value(ty, &format!("-{n}")).map_err(|e| e.to_string()),
            _ => Err("not a literal".to_string()),
        },
        _ => Err(format!("not a {} literal", ty.name())),
    }
}

/// A term's value once evaluated: the executor's answer for a bind marker
/// or a literal, and each part of a composite literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    Value(Value),
    Null,
    /// Protocol v4+ "not set".
    Unset,
}

/// A constant's text as typed (`0x...` for a blob), for [`parse_value`] and
/// messages.
pub(crate) fn constant_text(l: &Constant) -> String {
    match l {
        Constant::String(s)
        | Constant::Integer(s)
        | Constant::Float(s)
        | Constant::Uuid(s)
        | Constant::Duration(s) => s.clone(),
        Constant::Boolean(b) => b.to_string(),
        Constant::Blob(b) => {
            let mut s = String::from("0x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s
        }
        Constant::Null => "null".to_string(),
    }
}

/// A collection, tuple, UDT or vector literal `term` as a value of `ty`,
/// with Cassandra's rules and messages: elements of collections and vectors
/// never null or unset, tuple and UDT components nullable, a tuple no longer
/// than its type, UDT fields by name, a vector of exactly its dimension,
/// sets and maps normalised (`types::composite`). `part` evaluates one
/// element or component term as the given type (a constant, a bind marker,
/// a nested literal); `invalid` makes the caller's error of a message.
pub fn composite_literal<E>(
    term: &Term,
    ty: &CqlType,
    receiver: &str,
    part: &mut dyn FnMut(&Term, &CqlType) -> std::result::Result<Bound, E>,
    invalid: &dyn Fn(String) -> E,
) -> std::result::Result<Value, E> {
    use crate::types::composite::{normalize_map, normalize_set};
    let mut element = |t: &Term, ty: &CqlType, inside: &str| match part(t, ty)? {
        Bound::Value(v) => Ok(v),
        Bound::Null => Err(invalid(format!("null is not supported inside {inside}"))),
        Bound::Unset => Err(invalid(
            "unset value is not supported inside collections".to_string(),
        )),
    };
    Ok(match (term, ty) {
        (Term::List { items, .. }, CqlType::List { element: e, .. }) => Value::List(
            items
                .iter()
                .map(|t| element(t, e, "collections"))
                .collect::<std::result::Result<_, E>>()?,
        ),
        (
            Term::List { items, .. },
            CqlType::Vector {
                element: e,
                dimension,
            },
        ) => {
            if items.len() != *dimension as usize {
                return Err(invalid(format!(
                    "Invalid vector literal for {receiver} of type {}; expected {dimension} \
                     elements, but given {}",
                    ty.name(),
                    items.len()
                )));
            }
            Value::Vector(
                items
                    .iter()
                    .map(|t| element(t, e, "vectors"))
                    .collect::<std::result::Result<_, E>>()?,
            )
        }
        (Term::Set { items, .. }, CqlType::Set { element: e, .. }) => Value::Set(normalize_set(
            items
                .iter()
                .map(|t| element(t, e, "collections"))
                .collect::<std::result::Result<_, E>>()?,
        )),
        // `{}` parses as an empty map; it is also the empty set and a UDT of
        // nulls.
        (Term::Map { entries, .. }, CqlType::Set { .. }) if entries.is_empty() => {
            Value::Set(Vec::new())
        }
        (Term::Map { entries, .. }, CqlType::Udt { def, .. }) if entries.is_empty() => {
            Value::Udt(def.fields.iter().map(|(n, _)| (n.clone(), None)).collect())
        }
        (Term::Map { entries, .. }, CqlType::Map { key, value, .. }) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                out.push((
                    element(k, key, "collections")?,
                    element(v, value, "collections")?,
                ));
            }
            Value::Map(normalize_map(out))
        }
        (Term::Tuple { items, .. }, CqlType::Tuple(types)) => {
            if items.len() > types.len() {
                return Err(invalid(format!(
                    "Invalid tuple literal for {receiver}: too many elements. Type {} expects \
                     {} but got {}",
                    ty.name(),
                    types.len(),
                    items.len()
                )));
            }
            let mut out = Vec::with_capacity(types.len());
            for (t, item) in types.iter().zip(items) {
                out.push(component(part(item, t)?, receiver, invalid)?);
            }
            out.resize(types.len(), None);
            Value::Tuple(out)
        }
        (Term::Udt { fields, .. }, CqlType::Udt { def, .. }) => {
            let mut out: Vec<(String, Option<Value>)> =
                def.fields.iter().map(|(n, _)| (n.clone(), None)).collect();
            for (name, t) in fields {
                let Some(i) = def.fields.iter().position(|(n, _)| *n == name.text) else {
                    return Err(invalid(format!(
                        "Unknown field '{}' in value of user defined type {}",
                        name.text, def.name
                    )));
                };
                out[i].1 = component(part(t, &def.fields[i].1)?, receiver, invalid)?;
            }
            Value::Udt(out)
        }
        // Cassandra 5's `[...]` literal serves lists and vectors alike.
        _ if matches!(term, Term::List { .. }) => {
            return Err(invalid(format!(
                "Unexpected receiver type '{}'; only list and vector are expected",
                ty.name()
            )));
        }
        _ => {
            let what = match term {
                Term::Set { .. } => "set literal",
                Term::Map { .. } => "map literal",
                Term::Tuple { .. } => "tuple literal",
                _ => "user type literal",
            };
            return Err(invalid(format!(
                "Invalid {what} for {receiver} of type {}",
                ty.name()
            )));
        }
    })
}

/// A tuple or UDT component: null allowed, unset refused.
fn component<E>(
    b: Bound,
    receiver: &str,
    invalid: &dyn Fn(String) -> E,
) -> std::result::Result<Option<Value>, E> {
    match b {
        Bound::Value(v) => Ok(Some(v)),
        Bound::Null => Ok(None),
        Bound::Unset => Err(invalid(format!(
            "Invalid unset value for tuple field number 0 of {receiver}"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Option literals
// ---------------------------------------------------------------------------

/// A parsed literal value of a setting.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// Strings, numbers and booleans, as text (Cassandra stores sub-options as strings).
    Scalar(String),
    /// `{key: value, ...}`; values are scalars.
    Map(BTreeMap<String, String>),
}

/// A scalar option value: a string, a number or a boolean, as text.
pub(crate) fn scalar(t: Tok, pos: usize) -> std::result::Result<String, SyntaxError> {
    match t {
        Tok::Str { text, .. } => Ok(text),
        Tok::Num(n) => Ok(n),
        Tok::Ident(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") => {
            Ok(s.to_ascii_lowercase())
        }
        t => Err(SyntaxError {
            pos,
            msg: format!(
                "expected a string, number or boolean, found {}",
                t.describe()
            ),
        }),
    }
}

/// The rest of a map literal after `{` (invariant 3).
pub(crate) fn parse_map(
    lex: &mut Lexer<'_>,
) -> std::result::Result<BTreeMap<String, String>, SyntaxError> {
    let mut map = BTreeMap::new();
    if lex.eat_punct('}')? {
        return Ok(map);
    }
    loop {
        let (t, pos) = lex.next_tok()?;
        let key = match t {
            Tok::Str { text, .. } => text,
            // Lenient: Cassandra requires quoted keys, but a bare word is unambiguous.
            Tok::Ident(s) => s,
            t => {
                return Err(SyntaxError {
                    pos,
                    msg: format!("expected a map key, found {}", t.describe()),
                })
            }
        };
        lex.expect_punct(':')?;
        let (t, vpos) = lex.next_tok()?;
        let value = scalar(t, vpos)?;
        if map.insert(key.clone(), value).is_some() {
            return Err(SyntaxError {
                pos,
                msg: format!("map key {} given twice", quote(&key)),
            });
        }
        let (t, pos) = lex.next_tok()?;
        match t {
            Tok::Punct(',') => {
                // Tolerate a trailing comma.
                if lex.eat_punct('}')? {
                    return Ok(map);
                }
            }
            Tok::Punct('}') => return Ok(map),
            t => {
                return Err(SyntaxError {
                    pos,
                    msg: format!("expected ',' or '}}', found {}", t.describe()),
                })
            }
        }
    }
}
