//! Terms to values: literals read as the receiving column's type, bind markers
//! taken from the request, and the native functions a term may call (`now()`,
//! `uuid()`, `toTimestamp(...)`, ...).
//!
//! Owns Cassandra's assignment rules for constants (`Constants.Literal`): an
//! integer literal fits every numeric type and timestamps and dates, a string
//! literal texts, dates, timestamps and addresses, an unquoted UUID the two
//! UUID types, `0x...` blobs only. A constant that does not fit is refused as
//! Cassandra refuses it ("Invalid STRING constant (foo) for "k" of type int").
//!
//! Pure but for the clock and the random source of `now()` and `uuid()`, which
//! come from [`Eval`]. Any thread.
//!
//! Invariants:
//! 1. A bound value is validated against its receiver's type before it is used
//!    (`types::validate`): malformed bytes from a client are an `Invalid` error,
//!    never stored.
//! 2. `Unset` is only accepted where the protocol allows it (a column value of
//!    INSERT or UPDATE, which is then left alone); anywhere else it is refused.

use crate::cql::ast::{ArithOp, Literal, Name, Term};
use crate::types::{self, CqlType, Value};

use super::{BoundValue, QueryError, QueryOutcome, Values};

pub(crate) use crate::cql::literal::Bound;

impl Bound {
    /// The value, refusing null and unset with a message naming `what`.
    pub(crate) fn required(self, what: &str) -> QueryOutcome<Value> {
        match self {
            Bound::Value(v) => Ok(v),
            Bound::Null => Err(QueryError::invalid(format!(
                "Invalid null value for {what}"
            ))),
            Bound::Unset => Err(QueryError::invalid(format!(
                "Invalid unset value for {what}"
            ))),
        }
    }
}

/// What a term is evaluated against: the request's values and "now".
pub(crate) struct Eval<'a> {
    pub values: &'a Values,
    /// The marker names of the statement, in marker order (for named values).
    pub marker_names: &'a [Option<Name>],
    /// For `Values::Named` given to `?` markers: the receiver's name of each
    /// marker (Cassandra binds named values to `?` by the bind variable's name).
    pub marker_receivers: &'a [String],
    pub now_micros: i64,
}

impl Eval<'_> {
    /// The raw value bound to marker `index`.
    pub(crate) fn marker(&self, index: usize) -> QueryOutcome<&BoundValue> {
        match self.values {
            Values::None => Err(QueryError::invalid("Invalid amount of bind variables")),
            Values::Positional(v) => {
                if v.len() != self.marker_names.len() {
                    return Err(QueryError::invalid(format!(
                        "there were {} markers(?) in CQL but {} bound variables",
                        self.marker_names.len(),
                        v.len()
                    )));
                }
                v.get(index)
                    .ok_or_else(|| QueryError::invalid("bind marker out of range"))
            }
            Values::Named(named) => {
                let name = match self.marker_names.get(index) {
                    Some(Some(n)) => n.text.as_str(),
                    _ => self
                        .marker_receivers
                        .get(index)
                        .map(String::as_str)
                        .unwrap_or(""),
                };
                named
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v)
                    .ok_or_else(|| {
                        QueryError::invalid(format!("No value has been provided for '{name}'"))
                    })
            }
        }
    }
}

/// Which kind of constant a literal is, in Cassandra's words (for messages).
fn literal_kind(l: &Literal) -> &'static str {
    match l {
        Literal::String(_) => "STRING",
        Literal::Integer(_) => "INTEGER",
        Literal::Float(_) => "FLOAT",
        Literal::Boolean(_) => "BOOLEAN",
        Literal::Uuid(_) => "UUID",
        Literal::Blob(_) => "HEX",
        Literal::Duration(_) => "DURATION",
        Literal::Null => "NULL",
    }
}

/// Whether Cassandra lets a constant of this kind be assigned to `ty`.
fn assignable(l: &Literal, ty: &CqlType) -> bool {
    use CqlType::*;
    match l {
        Literal::String(_) => matches!(ty, Text | Ascii | Timestamp | Date | Time | Inet),
        Literal::Integer(_) => matches!(
            ty,
            TinyInt
                | SmallInt
                | Int
                | BigInt
                | Varint
                | Decimal
                | Float
                | Double
                | Timestamp
                | Date
                | Time
                | Counter
        ),
        Literal::Float(_) => matches!(ty, Float | Double | Decimal),
        Literal::Boolean(_) => *ty == Boolean,
        Literal::Uuid(_) => matches!(ty, Uuid | TimeUuid),
        Literal::Blob(_) => *ty == Blob,
        Literal::Duration(_) => *ty == Duration,
        Literal::Null => false,
    }
}

/// A literal as a value of `ty`.
pub(crate) fn literal_value(l: &Literal, ty: &CqlType, receiver: &str) -> QueryOutcome<Bound> {
    if *l == Literal::Null {
        return Ok(Bound::Null);
    }
    if !assignable(l, ty) {
        return Err(QueryError::invalid(format!(
            "Invalid {} constant ({}) for \"{receiver}\" of type {}",
            literal_kind(l),
            crate::cql::literal::constant_text(l),
            ty.name()
        )));
    }
    let v = match l {
        Literal::Blob(b) => Value::Blob(b.clone()),
        // An integer literal for a time is nanoseconds since midnight.
        Literal::Integer(s) if *ty == CqlType::Time => match s.parse::<i64>() {
            Ok(n) if (0..crate::types::temporal::NANOS_PER_DAY).contains(&n) => Value::Time(n),
            _ => {
                return Err(QueryError::invalid(format!(
                    "Unable to make long (for time) from: '{s}'"
                )))
            }
        },
        // An integer literal for a timestamp is milliseconds since the epoch.
        Literal::Integer(s) if *ty == CqlType::Timestamp => Value::Timestamp(
            s.parse::<i64>()
                .map_err(|_| QueryError::invalid(format!("Invalid timestamp value {s}")))?,
        ),
        other => {
            let text = crate::cql::literal::constant_text(other);
            crate::cql::literal::parse_value(ty, &text)
                .map_err(|_| QueryError::invalid(literal_error(ty, &text)))?
        }
    };
    Ok(Bound::Value(v))
}

/// Cassandra's message for a constant its type cannot read.
fn literal_error(ty: &CqlType, text: &str) -> String {
    let make = |what: &str| format!("Unable to make {what} from '{text}'");
    match ty {
        CqlType::TinyInt => make("byte"),
        CqlType::SmallInt => make("short"),
        CqlType::Int => make("int"),
        CqlType::BigInt => make("long"),
        CqlType::Float => make("float"),
        CqlType::Double => make("double"),
        CqlType::Varint => make("varint"),
        CqlType::Decimal => make("BigDecimal"),
        CqlType::Inet => make("inet address"),
        CqlType::Date => format!("Unable to coerce '{text}' to a formatted date (long)"),
        CqlType::Timestamp => format!("Unable to parse a date/time from '{text}'"),
        CqlType::TimeUuid => "TimeUUID supports only version 1 UUIDs".to_string(),
        CqlType::Uuid => format!("Unable to make UUID from '{text}'"),
        CqlType::Ascii => "Invalid ASCII character in string literal".to_string(),
        CqlType::Boolean => format!("Unable to make boolean from '{text}'"),
        CqlType::Blob => format!("cannot parse '{text}' as hex bytes"),
        CqlType::Text => format!("Invalid text value '{text}'"),
        CqlType::Counter => make("long"),
        CqlType::Time => format!("(TimeType) Unable to coerce '{text}' to a formatted time (long)"),
        CqlType::Duration => format!("Unable to convert '{text}' to a duration"),
        other => format!("Invalid {} value '{text}'", other.name()),
    }
}

/// Cassandra's message for serialized bytes its type refuses.
fn bytes_error(ty: &CqlType, bytes: &[u8], e: &crate::error::Error) -> String {
    let n = bytes.len();
    match ty {
        CqlType::Vector { element, dimension }
            if element
                .fixed_size()
                .is_some_and(|size| n < size * *dimension as usize) =>
        {
            format!("Not enough bytes to read a {}", ty.name())
        }
        CqlType::Int => format!("Expected 4 or 0 byte int ({n})"),
        CqlType::BigInt | CqlType::Timestamp | CqlType::Counter => {
            format!("Expected 8 or 0 byte long ({n})")
        }
        CqlType::Time => format!("Expected 8 byte long for time ({n})"),
        CqlType::SmallInt => format!("Expected 2 bytes for a smallint ({n})"),
        CqlType::TinyInt => format!("Expected 1 byte for a tinyint ({n})"),
        CqlType::Float => format!("Expected 4 or 0 byte value for a float ({n})"),
        CqlType::Double => format!("Expected 8 or 0 byte value for a double ({n})"),
        CqlType::Boolean => format!("Expected 1 or 0 byte value ({n})"),
        CqlType::Uuid => format!("UUID should be 16 or 0 bytes ({n})"),
        CqlType::TimeUuid if n != 16 => format!("UUID should be 16 or 0 bytes ({n})"),
        CqlType::TimeUuid =>
        // Cassandra names the top nibble of the first long, not the version
        // field: the message says what Cassandra says.
        {
            format!("Invalid version for TimeUUID type: {:#x}", bytes[0] >> 4)
        }
        CqlType::Date => format!("Expected 4 byte long for date ({n})"),
        CqlType::Ascii => match bytes.iter().find(|b| **b >= 0x80) {
            Some(b) => format!("Invalid byte for ascii: {}", *b as i8),
            None => "Invalid ascii value".to_string(),
        },
        CqlType::Text => "String didn't validate.".to_string(),
        CqlType::Inet => format!("Unable to make inet address from {n} bytes"),
        CqlType::Varint | CqlType::Decimal | CqlType::Blob => {
            format!("Invalid {} value of {n} bytes", ty.name())
        }
        _ => crate::error::strip_prefix(e),
    }
}

/// Serialized bytes from a client as a value of `ty` (invariant 1).
pub(crate) fn bytes_value(bytes: &[u8], ty: &CqlType, receiver: &str) -> QueryOutcome<Value> {
    types::deserialize(ty, bytes).map_err(|e| {
        // A blobAs<type>() function names itself and the value, as Cassandra.
        if let Some(rest) = receiver.strip_prefix("blobas") {
            QueryError::invalid(format!(
                "In call to function system.blobas{rest}, value 0x{} is not a valid binary \
                 representation for type {}",
                super::executor::hex(bytes),
                ty.name()
            ))
        } else {
            QueryError::invalid(bytes_error(ty, bytes, &e))
        }
    })
}

/// Evaluates `term` for a receiver of type `ty` named `receiver`: a
/// native value, or a collection, tuple, UDT or vector literal whose parts
/// are evaluated in turn (bind markers included), nulls and unset values
/// refused inside collections as Cassandra refuses them.
pub(crate) fn scalar(
    term: &Term,
    ty: &CqlType,
    receiver: &str,
    eval: &Eval<'_>,
) -> QueryOutcome<Bound> {
    match term.ungrouped(matches!(ty, CqlType::Tuple(_))) {
        Term::Literal { value, .. } => literal_value(value, ty, receiver),
        Term::Bind(m) => match eval.marker(m.index)? {
            BoundValue::Value(b) => Ok(Bound::Value(bytes_value(b, ty, receiver)?)),
            BoundValue::Null => Ok(Bound::Null),
            BoundValue::Unset => Ok(Bound::Unset),
        },
        Term::Function { name, args, .. } => {
            let v = call_function(&name.name.text, args, Some(ty.clone()), eval)?;
            coerce(v, ty, receiver)
        }
        Term::Cast { ty: _, term, .. } => {
            // A type hint `(int) ?`: the receiver's type decides the value.
            scalar(term, ty, receiver, eval)
        }
        Term::Negate { term: inner, .. } => {
            let v = scalar(inner, ty, receiver, eval)?;
            match v {
                Bound::Value(v) => Ok(Bound::Value(negate(v)?)),
                other => Ok(other),
            }
        }
        // `'2024-01-01' - 1d`: a timestamp or date moved by a duration.
        Term::Arith {
            op, left, right, ..
        } if matches!(ty, CqlType::Timestamp | CqlType::Date) => {
            let l = scalar(left, ty, receiver, eval)?.required(receiver)?;
            let r = scalar(right, &CqlType::Duration, receiver, eval)?.required(receiver)?;
            Ok(Bound::Value(move_by_duration(*op, l, &r)?))
        }
        Term::Arith {
            op, left, right, ..
        } => {
            let l = scalar(left, ty, receiver, eval)?.required(receiver)?;
            let r = scalar(right, ty, receiver, eval)?.required(receiver)?;
            Ok(Bound::Value(arith(*op, l, r)?))
        }
        Term::List { .. }
        | Term::Set { .. }
        | Term::Map { .. }
        | Term::Udt { .. }
        | Term::Tuple { .. } => composite(term, ty, receiver, eval).map(Bound::Value),
    }
}

/// A collection, tuple, UDT or vector literal as a value of `ty`, its parts
/// evaluated as terms in turn (bind markers included).
fn composite(term: &Term, ty: &CqlType, receiver: &str, eval: &Eval<'_>) -> QueryOutcome<Value> {
    crate::cql::literal::composite_literal(
        term,
        ty,
        receiver,
        &mut |t, ty| scalar(t, ty, receiver, eval),
        &QueryError::invalid,
    )
}

/// A function's result converted to the receiver's type where Cassandra would
/// accept it (a timeuuid for a uuid column, say).
fn coerce(v: Value, ty: &CqlType, receiver: &str) -> QueryOutcome<Bound> {
    if v.fits(ty) {
        return Ok(Bound::Value(v));
    }
    match (v, ty) {
        (Value::TimeUuid(u), CqlType::Uuid) => Ok(Bound::Value(Value::Uuid(u))),
        (v, _) => Err(QueryError::invalid(format!(
            "Type error: cannot assign result of function of type {} to \"{receiver}\" of type {}",
            v.kind_name(),
            ty.name()
        ))),
    }
}

fn negate(v: Value) -> QueryOutcome<Value> {
    let overflow = || QueryError::invalid("integer overflow in negation");
    Ok(match v {
        Value::TinyInt(x) => Value::TinyInt(x.checked_neg().ok_or_else(overflow)?),
        Value::SmallInt(x) => Value::SmallInt(x.checked_neg().ok_or_else(overflow)?),
        Value::Int(x) => Value::Int(x.checked_neg().ok_or_else(overflow)?),
        Value::BigInt(x) => Value::BigInt(x.checked_neg().ok_or_else(overflow)?),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        other => {
            return Err(QueryError::invalid(format!(
                "the operation '-' is not supported on {}",
                other.kind_name()
            )))
        }
    })
}

/// Constant arithmetic on two values of one numeric type, with Java's
/// overflow behaviour refused rather than wrapped silently.
pub(crate) fn arith(op: ArithOp, l: Value, r: Value) -> QueryOutcome<Value> {
    let overflow = || QueryError::invalid("arithmetic overflow or division by zero");
    macro_rules! ints {
        ($a:expr, $b:expr) => {
            match op {
                ArithOp::Add => $a.checked_add($b),
                ArithOp::Sub => $a.checked_sub($b),
                ArithOp::Mul => $a.checked_mul($b),
                ArithOp::Div => $a.checked_div($b),
                ArithOp::Rem => $a.checked_rem($b),
            }
            .ok_or_else(overflow)
        };
    }
    fn float(op: ArithOp, a: f64, b: f64) -> f64 {
        match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => a / b,
            ArithOp::Rem => a % b,
        }
    }
    Ok(match (l, r) {
        (Value::TinyInt(a), Value::TinyInt(b)) => Value::TinyInt(ints!(a, b)?),
        (Value::SmallInt(a), Value::SmallInt(b)) => Value::SmallInt(ints!(a, b)?),
        (Value::Int(a), Value::Int(b)) => Value::Int(ints!(a, b)?),
        (Value::BigInt(a), Value::BigInt(b)) => Value::BigInt(ints!(a, b)?),
        (Value::Float(a), Value::Float(b)) => {
            Value::Float(float(op, f64::from(a), f64::from(b)) as f32)
        }
        (Value::Double(a), Value::Double(b)) => Value::Double(float(op, a, b)),
        (l, _) => {
            return Err(QueryError::invalid(format!(
                "arithmetic on {} values is not supported",
                l.kind_name()
            )))
        }
    })
}

/// A timestamp or date moved by a duration (`ts + 1d`, `dt - 1mo`), as
/// Cassandra moves them: calendar months first (the day of month clamped),
/// then days and, for a timestamp, the time part; a date only by whole days.
pub(crate) fn move_by_duration(op: ArithOp, v: Value, duration: &Value) -> QueryOutcome<Value> {
    let Value::Duration {
        months,
        days,
        nanos,
    } = *duration
    else {
        return Err(QueryError::invalid("not a duration"));
    };
    let sign = if op == ArithOp::Sub { -1 } else { 1 };
    let (months, days, nanos) = (
        i64::from(months) * sign,
        i64::from(days) * sign,
        nanos * sign,
    );
    match v {
        Value::Timestamp(ms) => {
            let moved = add_months_ms(ms, months)
                .saturating_add(days.saturating_mul(86_400_000))
                .saturating_add(nanos / 1_000_000);
            Ok(Value::Timestamp(moved))
        }
        Value::Date(d) => {
            if nanos != 0 {
                return Err(QueryError::invalid(format!(
                    "The duration must have a day precision. Was: {}",
                    crate::types::format_value(&Value::Duration {
                        months: months as i32,
                        days: days as i32,
                        nanos,
                    })
                )));
            }
            let day = i64::from(d) - (1 << 31);
            let ms = add_months_ms(day * 86_400_000, months) / 86_400_000 + days;
            u32::try_from(ms + (1 << 31))
                .map(Value::Date)
                .map_err(|_| QueryError::invalid("date out of range"))
        }
        _ => Err(QueryError::invalid(
            "a duration moves a timestamp or a date only",
        )),
    }
}

/// A UTC time in milliseconds moved by whole calendar months, the day of
/// month clamped to the new month's length (as `java.time` does).
fn add_months_ms(ms: i64, months: i64) -> i64 {
    if months == 0 {
        return ms;
    }
    let day_ms = ms.rem_euclid(86_400_000);
    let days = ms.div_euclid(86_400_000);
    let (y, m, d) = crate::types::civil_from_days(days);
    let total = y * 12 + i64::from(m) - 1 + months;
    let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    let nd = d.min(crate::types::days_in_month(ny, nm));
    crate::types::days_from_civil(ny, nm, nd) * 86_400_000 + day_ms
}

// ---------------------------------------------------------------------------
// Native scalar functions of terms
// ---------------------------------------------------------------------------

/// Offset between the UUID epoch (1582-10-15) and the Unix epoch, in 100 ns
/// units.
const UUID_EPOCH_OFFSET_100NS: i64 = 0x01B2_1DD2_1381_4000;

/// A version 1 UUID for a time in microseconds, with the given clock sequence
/// and node (Cassandra's `TimeUUID`).
pub(crate) fn timeuuid(micros: i64, clock_seq_and_node: u64) -> [u8; 16] {
    let ts = (micros.saturating_mul(10)).saturating_add(UUID_EPOCH_OFFSET_100NS) as u64;
    let time_low = (ts & 0xFFFF_FFFF) as u32;
    let time_mid = ((ts >> 32) & 0xFFFF) as u16;
    let time_hi = (((ts >> 48) & 0x0FFF) as u16) | 0x1000;
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&time_low.to_be_bytes());
    u[4..6].copy_from_slice(&time_mid.to_be_bytes());
    u[6..8].copy_from_slice(&time_hi.to_be_bytes());
    // Variant 10xx in the clock sequence's top bits.
    let lsb = (clock_seq_and_node & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    u[8..16].copy_from_slice(&lsb.to_be_bytes());
    u
}

/// The time of a version 1 UUID, in milliseconds since the Unix epoch.
pub(crate) fn timeuuid_millis(u: &[u8; 16]) -> i64 {
    let time_low = u64::from(u32::from_be_bytes([u[0], u[1], u[2], u[3]]));
    let time_mid = u64::from(u16::from_be_bytes([u[4], u[5]]));
    let time_hi = u64::from(u16::from_be_bytes([u[6], u[7]]) & 0x0FFF);
    let ts = (time_hi << 48) | (time_mid << 32) | time_low;
    (ts as i64 - UUID_EPOCH_OFFSET_100NS) / 10_000
}

pub(crate) use crate::types::random_bytes;

fn random_uuid() -> [u8; 16] {
    let mut u = random_bytes::<16>();
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// A fresh timeuuid for "now": unique within the process even for two calls in
/// one microsecond (the clock sequence and node are random per process, and the
/// time is bumped past the last one handed out, as Cassandra's `nextTimeUUID`).
pub(crate) fn now_timeuuid(now_micros: i64) -> [u8; 16] {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    static LAST_100NS: AtomicI64 = AtomicI64::new(0);
    static NODE: AtomicU64 = AtomicU64::new(0);
    let mut node = NODE.load(Ordering::Relaxed);
    if node == 0 {
        let b = random_bytes::<8>();
        // Multicast bit set: a random node id, not a MAC address (RFC 4122 4.5).
        node = u64::from_be_bytes(b) | 0x0000_0100_0000_0000 | 1;
        NODE.store(node, Ordering::Relaxed);
    }
    let want = now_micros.saturating_mul(10);
    let mut prev = LAST_100NS.load(Ordering::Relaxed);
    let ts = loop {
        let next = want.max(prev + 1);
        match LAST_100NS.compare_exchange(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(p) => prev = p,
        }
    };
    // timeuuid() takes microseconds; keep the sub-microsecond part by building
    // from 100 ns units directly.
    let mut u = timeuuid(0, node);
    let ts = (ts.saturating_add(UUID_EPOCH_OFFSET_100NS)) as u64;
    u[0..4].copy_from_slice(&((ts & 0xFFFF_FFFF) as u32).to_be_bytes());
    u[4..6].copy_from_slice(&(((ts >> 32) & 0xFFFF) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((ts >> 48) & 0x0FFF) as u16) | 0x1000).to_be_bytes());
    u
}

/// Calls a native scalar function of a term. `hint` is the receiver's type
/// where known (for `(type)` casts and overloads).
pub(crate) fn call_function(
    name: &str,
    args: &[Term],
    hint: Option<CqlType>,
    eval: &Eval<'_>,
) -> QueryOutcome<Value> {
    let lower = name.to_ascii_lowercase();
    let arity = |n: usize| -> QueryOutcome<()> {
        if args.len() == n {
            Ok(())
        } else {
            Err(QueryError::invalid(format!(
                "Invalid number of arguments in call to function system.{lower}: {n} required but {} provided",
                args.len()
            )))
        }
    };
    let now_millis = eval.now_micros.div_euclid(1000);
    let arg = |i: usize, ty: CqlType| -> QueryOutcome<Value> {
        scalar(&args[i], &ty, &format!("{lower}(arg{i})"), eval)?.required(&lower)
    };
    let any_time_arg = |i: usize| -> QueryOutcome<Value> {
        // The argument's own type decides: a timeuuid, a timestamp or a date.
        match &args[i] {
            Term::Function { name, args, .. } => call_function(&name.name.text, args, None, eval),
            Term::Literal {
                value: Literal::Uuid(_),
                ..
            } => arg(i, CqlType::TimeUuid),
            Term::Literal {
                value: Literal::Integer(_),
                ..
            } => arg(i, CqlType::Timestamp),
            Term::Literal { .. } => arg(i, CqlType::Timestamp),
            _ => Err(QueryError::invalid(format!(
                "Ambiguous call to function {lower}: use a type hint"
            ))),
        }
    };
    Ok(match lower.as_str() {
        "fromjson" => {
            arity(1)?;
            let Some(ty) = hint else {
                return Err(QueryError::invalid(
                    "fromJson() needs a receiver of a known type",
                ));
            };
            let text = match arg(0, CqlType::Text)? {
                Value::Text(t) => t,
                other => return Err(bad_arg(&lower, &other)),
            };
            match super::json::from_json(&text, ty, &lower)? {
                Bound::Value(v) => v,
                _ => return Err(QueryError::invalid("fromJson() of null: use null instead")),
            }
        }
        "now" | "currenttimeuuid" => {
            arity(0)?;
            Value::TimeUuid(now_timeuuid(eval.now_micros))
        }
        "uuid" => {
            arity(0)?;
            Value::Uuid(random_uuid())
        }
        "currenttimestamp" => {
            arity(0)?;
            Value::Timestamp(now_millis)
        }
        "currentdate" => {
            arity(0)?;
            Value::Date(date_of_millis(now_millis))
        }
        "totimestamp" => {
            arity(1)?;
            match any_time_arg(0)? {
                Value::TimeUuid(u) => Value::Timestamp(timeuuid_millis(&u)),
                Value::Date(d) => Value::Timestamp((i64::from(d) - (1 << 31)) * 86_400_000),
                Value::Timestamp(t) => Value::Timestamp(t),
                other => return Err(bad_arg(&lower, &other)),
            }
        }
        "todate" => {
            arity(1)?;
            match any_time_arg(0)? {
                Value::TimeUuid(u) => Value::Date(date_of_millis(timeuuid_millis(&u))),
                Value::Timestamp(t) => Value::Date(date_of_millis(t)),
                Value::Date(d) => Value::Date(d),
                other => return Err(bad_arg(&lower, &other)),
            }
        }
        "tounixtimestamp" => {
            arity(1)?;
            match any_time_arg(0)? {
                Value::TimeUuid(u) => Value::BigInt(timeuuid_millis(&u)),
                Value::Timestamp(t) => Value::BigInt(t),
                Value::Date(d) => Value::BigInt((i64::from(d) - (1 << 31)) * 86_400_000),
                other => return Err(bad_arg(&lower, &other)),
            }
        }
        "mintimeuuid" | "maxtimeuuid" => {
            arity(1)?;
            let Value::Timestamp(t) = arg(0, CqlType::Timestamp)? else {
                return Err(QueryError::invalid(format!("{lower} takes a timestamp")));
            };
            // Cassandra's bounds: the lowest and highest clock-sequence/node
            // bits for that millisecond.
            let micros = t.saturating_mul(1000);
            if lower == "mintimeuuid" {
                Value::TimeUuid(timeuuid(micros, 0x8080_8080_8080_8080))
            } else {
                let mut u = timeuuid(micros + 999, 0);
                // Cassandra's highest clock-sequence/node bits, variant bits
                // included (0x7f...: not an RFC 4122 variant, as Cassandra's).
                u[8..16].copy_from_slice(&0x7f7f_7f7f_7f7f_7f7fu64.to_be_bytes());
                // The last 100 ns tick of the millisecond.
                let ts = ((micros + 999) * 10 + 9 + UUID_EPOCH_OFFSET_100NS) as u64;
                u[0..4].copy_from_slice(&((ts & 0xFFFF_FFFF) as u32).to_be_bytes());
                Value::TimeUuid(u)
            }
        }
        _ => {
            if let Some(v) = blob_conversion(&lower, args, hint, eval)? {
                v
            } else {
                return Err(QueryError::invalid(format!("Unknown function '{name}'")));
            }
        }
    })
}

fn bad_arg(f: &str, v: &Value) -> QueryError {
    QueryError::invalid(format!(
        "Function system.{f} does not take a {} argument",
        v.kind_name()
    ))
}

fn date_of_millis(ms: i64) -> u32 {
    (ms.div_euclid(86_400_000) + (1 << 31)).clamp(0, i64::from(u32::MAX)) as u32
}

/// `typeAsBlob(x)` and `blobAsType(b)`.
fn blob_conversion(
    lower: &str,
    args: &[Term],
    _hint: Option<CqlType>,
    eval: &Eval<'_>,
) -> QueryOutcome<Option<Value>> {
    if args.len() != 1 {
        return Ok(None);
    }
    if let Some(ty) = lower.strip_suffix("asblob") {
        let Ok(ty) = CqlType::parse(ty) else {
            return Ok(None);
        };
        let v = scalar(&args[0], &ty, lower, eval)?.required(lower)?;
        return Ok(Some(Value::Blob(types::serialize(&v))));
    }
    if let Some(ty) = lower.strip_prefix("blobas") {
        let Ok(ty) = CqlType::parse(ty) else {
            return Ok(None);
        };
        let Value::Blob(b) = scalar(&args[0], &CqlType::Blob, lower, eval)?.required(lower)? else {
            return Ok(None);
        };
        return Ok(Some(bytes_value(&b, &ty, lower)?));
    }
    Ok(None)
}

// ---------------------------------------------------------------------------
// Collections of bound values (IN lists, multi-column tuples)
// ---------------------------------------------------------------------------

/// Reads a `[int n][n x [bytes]]` serialized list (the value of an `IN ?`
/// marker) as values of `ty`. Every length is checked against the input.
pub(crate) fn decode_list(bytes: &[u8], ty: &CqlType, receiver: &str) -> QueryOutcome<Vec<Bound>> {
    let bad = || QueryError::invalid(format!("Invalid list value for \"{receiver}\""));
    let mut r = bytes;
    let n = take_i32(&mut r).ok_or_else(bad)?;
    if n < 0 || n as usize > r.len() / 4 {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = take_i32(&mut r).ok_or_else(bad)?;
        if len < 0 {
            out.push(Bound::Null);
            continue;
        }
        let len = len as usize;
        if len > r.len() {
            return Err(bad());
        }
        let (item, rest) = r.split_at(len);
        out.push(Bound::Value(bytes_value(item, ty, receiver)?));
        r = rest;
    }
    if !r.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// Reads a serialized tuple (`[bytes]` per element) of the given types.
pub(crate) fn decode_tuple(
    bytes: &[u8],
    types: &[CqlType],
    receiver: &str,
) -> QueryOutcome<Vec<Bound>> {
    let bad = || QueryError::invalid(format!("Invalid tuple value for \"{receiver}\""));
    let mut r = bytes;
    let mut out = Vec::with_capacity(types.len());
    for ty in types {
        if r.is_empty() {
            // Trailing elements may be omitted (null).
            out.push(Bound::Null);
            continue;
        }
        let len = take_i32(&mut r).ok_or_else(bad)?;
        if len < 0 {
            out.push(Bound::Null);
            continue;
        }
        let len = len as usize;
        if len > r.len() {
            return Err(bad());
        }
        let (item, rest) = r.split_at(len);
        out.push(Bound::Value(bytes_value(item, ty, receiver)?));
        r = rest;
    }
    if !r.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

fn take_i32(r: &mut &[u8]) -> Option<i32> {
    if r.len() < 4 {
        return None;
    }
    let (h, t) = r.split_at(4);
    *r = t;
    Some(i32::from_be_bytes([h[0], h[1], h[2], h[3]]))
}

/// Serializes a list of serialized elements (`[int n][n x [bytes]]`).
pub(crate) fn encode_list(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + items.iter().map(|i| 4 + i.len()).sum::<usize>());
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for i in items {
        out.extend_from_slice(&(i.len() as i32).to_be_bytes());
        out.extend_from_slice(i);
    }
    out
}

/// Serializes a map of serialized keys and values.
pub(crate) fn encode_map(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for (k, v) in entries {
        out.extend_from_slice(&(k.len() as i32).to_be_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(values: &Values) -> Eval<'_> {
        Eval {
            values,
            marker_names: &[],
            marker_receivers: &[],
            now_micros: 1_700_000_000_000_000,
        }
    }

    fn lit(l: Literal) -> Term {
        Term::Literal { value: l, pos: 0 }
    }

    #[test]
    fn constants_are_assigned_as_cassandra_assigns_them() {
        let v = Values::None;
        let e = eval(&v);
        assert_eq!(
            scalar(
                &lit(Literal::Integer("42".into())),
                &CqlType::BigInt,
                "k",
                &e
            )
            .unwrap(),
            Bound::Value(Value::BigInt(42))
        );
        assert_eq!(
            scalar(
                &lit(Literal::Integer("1000".into())),
                &CqlType::Timestamp,
                "t",
                &e
            )
            .unwrap(),
            Bound::Value(Value::Timestamp(1000))
        );
        let err = scalar(&lit(Literal::String("x".into())), &CqlType::Int, "k", &e).unwrap_err();
        assert_eq!(
            err.message,
            "Invalid STRING constant (x) for \"k\" of type int"
        );
        assert!(scalar(&lit(Literal::Float("1.5".into())), &CqlType::Int, "k", &e).is_err());
        assert_eq!(
            scalar(&lit(Literal::Null), &CqlType::Int, "k", &e).unwrap(),
            Bound::Null
        );
    }

    #[test]
    fn timeuuids_carry_their_time_and_are_unique() {
        let now = 1_700_000_000_123_456;
        let a = now_timeuuid(now);
        let b = now_timeuuid(now);
        assert_ne!(a, b);
        assert_eq!(a[6] >> 4, 1, "version 1");
        assert_eq!(a[8] >> 6, 0b10, "RFC 4122 variant");
        assert_eq!(timeuuid_millis(&a), now / 1000);
        assert_eq!(timeuuid_millis(&timeuuid(now, 0)), now / 1000);
    }

    #[test]
    fn serialized_lists_are_bounded_by_their_input() {
        let list = encode_list(&[1i32.to_be_bytes().to_vec(), 2i32.to_be_bytes().to_vec()]);
        assert_eq!(
            decode_list(&list, &CqlType::Int, "in(k)").unwrap(),
            vec![Bound::Value(Value::Int(1)), Bound::Value(Value::Int(2))]
        );
        // A count far beyond the bytes present is refused before allocating.
        let mut huge = i32::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0; 8]);
        assert!(decode_list(&huge, &CqlType::Int, "in(k)").is_err());
        assert!(decode_list(&list[..list.len() - 1], &CqlType::Int, "in(k)").is_err());
    }

    #[test]
    fn arithmetic_refuses_overflow() {
        assert_eq!(
            arith(ArithOp::Add, Value::Int(1), Value::Int(2)).unwrap(),
            Value::Int(3)
        );
        assert!(arith(ArithOp::Add, Value::Int(i32::MAX), Value::Int(1)).is_err());
        assert!(arith(ArithOp::Div, Value::Int(1), Value::Int(0)).is_err());
    }
}
