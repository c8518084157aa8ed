//! CQL types and values: their text form ([`format_value`]; parsing it back is
//! `cql::literal::parse_value`, which depends on this module, not the reverse),
//! Cassandra's native byte format, and a byte-comparable encoding for clustering
//! columns.
//!
//! Contract and invariants:
//!
//! 1. [`serialize`] emits exactly Cassandra's native (protocol and storage) bytes for
//!    a value; partition tokens hash these bytes, so they must match Cassandra.
//!    [`deserialize`] is its inverse and validates; varints are normalised to minimal
//!    two's complement, so `serialize(deserialize(b))` may shorten a non-minimal `b`.
//! 2. `parse_value(ty, &format_value(v)) == v` for every value `v` of type `ty`
//!    (for floats: bit-equal, except that every NaN parses as the canonical
//!    NaN; the zero duration prints as Cassandra prints it, the empty string,
//!    which is not a literal).
//! 3. `memcmp(encode_comparable(a), encode_comparable(b))` orders like Cassandra's
//!    comparator for the type, equality included: values the comparator holds equal
//!    (decimal `1.5` and `1.50`) have identical encodings, so the engine, which only
//!    compares bytes (memtable, sstable index, merges, clustering-range filters),
//!    treats them as one key. Deviations are listed below.
//! 4. Comparable encodings are prefix-free: no encoding is a proper prefix of another,
//!    so concatenated multi-column keys compare column by column and a clustering
//!    prefix is a valid range bound.
//! 5. A descending encoding is the ascending one with every byte inverted; together
//!    with 4 this reverses the order exactly.
//! 6. `decode_comparable(encode_comparable(v)) == canonical(v)`, consuming exactly
//!    the bytes of one encoding (for valid values: inet of 4 or 16 bytes, decimals of
//!    at most 2^20 digits; Cassandra caps clustering values at 64 KiB anyway).
//!    [`canonical`] is the identity except for decimals (see "Decimal canonical form")
//!    and NaNs.
//! 7. No input can cause a panic: malformed text or bytes give
//!    `Error::InvalidInput` naming the type and the problem.
//!
//! Decimal canonical form: Cassandra's `DecimalType` compares numerically, so `1.5`,
//! `1.50` and `15E-1` are one clustering value. The comparable encoding keeps only the
//! value (sign, significant digits, exponent), and decoding returns one canonical
//! spelling per value ([`canonical`]): trailing zeros stripped (`1.50` → `1.5`,
//! `0.00` → `0`), integers in plain notation (`1E+2` → `100`) unless that would write
//! out more than [`MAX_PLAIN_TRAILING_ZEROS`] zeros (`1E+100` stays). A clustering
//! written as `1.50` therefore reads back as `1.5`: the spelling is not part of the
//! key, as in Cassandra, which returns whichever spelling it happened to keep.
//! Partition keys are different: Cassandra hashes a partition key's serialized bytes
//! (scale included), so `1.5` and `1.50` are two partitions there, and here too
//! ([`serialize`] keeps the spelling; see `schema.rs`, invariant 4).
//!
//! Deviations from Cassandra:
//!
//! - Float/double: NaNs are canonicalised (as Java's `Float.compare` does), so NaN
//!   sorts after +Infinity and a NaN payload is not preserved by the comparable
//!   encoding. `-0.0` sorts before `0.0`, as in Java.
//! - Empty byte strings: Cassandra accepts a zero-length buffer as an "empty" value for
//!   most types; [`Value`] cannot represent that, so [`deserialize`] and [`validate`]
//!   reject empty bytes for every type except text, ascii and blob.
//! - Uuid columns compare like `UUIDType` (version first, then the 60-bit timestamp
//!   for version 1, else the high 64 bits, then the low 64 bits unsigned). Timeuuid
//!   columns compare like `TimeUUIDType`: timestamp, then the low 8 bytes as *signed*
//!   bytes (Cassandra's compatibility quirk), which we reproduce.

use crate::error::{Error, Result};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

pub mod composite;
pub mod temporal;

pub use composite::element_path;

/// A CQL column type: the native types, and the composite ones built from
/// them (see [`composite`] for their encodings and `docs/cql-types.md`).
///
/// Composite parts are behind `Arc`s, so a clone is a few reference-count
/// increments whatever the depth. The serde form of the native types is the
/// variant name (`"Int"`), as `schema.json` has always stored them; composite
/// types are objects (`{"List": {"element": "Int", "frozen": false}}`), so a
/// catalog written before composite types existed reads unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CqlType {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Text,
    Ascii,
    Blob,
    Uuid,
    TimeUuid,
    Timestamp,
    Date,
    Varint,
    Decimal,
    Inet,
    /// Nanoseconds since midnight.
    Time,
    /// Months, days and nanoseconds, each signed, all of one sign.
    Duration,
    /// A counter column: a 64-bit total that writes add to.
    Counter,
    /// `list<T>`; non-frozen lists store one cell per element.
    List {
        element: Arc<CqlType>,
        frozen: bool,
    },
    /// `set<T>`: elements distinct and in the element type's order.
    Set {
        element: Arc<CqlType>,
        frozen: bool,
    },
    /// `map<K, V>`: keys distinct and in the key type's order.
    Map {
        key: Arc<CqlType>,
        value: Arc<CqlType>,
        frozen: bool,
    },
    /// `tuple<...>`, always frozen.
    Tuple(Arc<Vec<CqlType>>),
    /// A user-defined type; non-frozen UDTs store one cell per field.
    Udt {
        def: Arc<UdtDef>,
        frozen: bool,
    },
    /// `vector<T, n>` (Cassandra 5), always frozen.
    Vector {
        element: Arc<CqlType>,
        dimension: u32,
    },
}

/// A user-defined type's definition, as a column of that type carries it (so
/// a value can be encoded, decoded and printed without the catalog).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct UdtDef {
    pub keyspace: String,
    pub name: String,
    pub fields: Vec<(String, CqlType)>,
}

impl CqlType {
    /// Parses a native CQL type name, case-insensitively (`varchar` is
    /// `text`). Composite types are parsed by the CQL parser
    /// (`cql::parser`), which knows the keyspace's user-defined types.
    pub fn parse(name: &str) -> Result<CqlType> {
        const NAMES: &[(&str, CqlType)] = &[
            ("boolean", CqlType::Boolean),
            ("tinyint", CqlType::TinyInt),
            ("smallint", CqlType::SmallInt),
            ("int", CqlType::Int),
            ("bigint", CqlType::BigInt),
            ("float", CqlType::Float),
            ("double", CqlType::Double),
            ("text", CqlType::Text),
            ("varchar", CqlType::Text),
            ("ascii", CqlType::Ascii),
            ("blob", CqlType::Blob),
            ("uuid", CqlType::Uuid),
            ("timeuuid", CqlType::TimeUuid),
            ("timestamp", CqlType::Timestamp),
            ("date", CqlType::Date),
            ("varint", CqlType::Varint),
            ("decimal", CqlType::Decimal),
            ("inet", CqlType::Inet),
            ("time", CqlType::Time),
            ("duration", CqlType::Duration),
            ("counter", CqlType::Counter),
        ];
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, t)| t.clone())
            .ok_or_else(|| Error::InvalidInput(format!("unknown CQL type '{name}'")))
    }

    /// The CQL spelling, as Cassandra prints it (`CQL3Type.toString`):
    /// `int`, `list<int>`, `frozen<map<text, int>>`, `frozen<tuple<int, text>>`,
    /// `frozen<address>`, `vector<float, 3>`.
    pub fn name(&self) -> String {
        let native = match self {
            CqlType::Boolean => "boolean",
            CqlType::TinyInt => "tinyint",
            CqlType::SmallInt => "smallint",
            CqlType::Int => "int",
            CqlType::BigInt => "bigint",
            CqlType::Float => "float",
            CqlType::Double => "double",
            CqlType::Text => "text",
            CqlType::Ascii => "ascii",
            CqlType::Blob => "blob",
            CqlType::Uuid => "uuid",
            CqlType::TimeUuid => "timeuuid",
            CqlType::Timestamp => "timestamp",
            CqlType::Date => "date",
            CqlType::Varint => "varint",
            CqlType::Decimal => "decimal",
            CqlType::Inet => "inet",
            CqlType::Time => "time",
            CqlType::Duration => "duration",
            CqlType::Counter => "counter",
            composite => return composite::type_name(composite),
        };
        native.to_string()
    }

    /// Serialized size in bytes when it is the same for every value.
    pub fn fixed_size(&self) -> Option<usize> {
        match self {
            CqlType::Boolean | CqlType::TinyInt => Some(1),
            CqlType::SmallInt => Some(2),
            CqlType::Int | CqlType::Float | CqlType::Date => Some(4),
            CqlType::BigInt
            | CqlType::Double
            | CqlType::Timestamp
            | CqlType::Time
            | CqlType::Counter => Some(8),
            CqlType::Uuid | CqlType::TimeUuid => Some(16),
            CqlType::Vector { element, dimension } => element
                .fixed_size()
                .and_then(|n| n.checked_mul(*dimension as usize)),
            _ => None,
        }
    }

    /// Whether a value of this type is stored as one cell per element or
    /// field (a non-frozen collection or UDT), Cassandra's `isMultiCell`.
    pub fn is_multi_cell(&self) -> bool {
        matches!(
            self,
            CqlType::List { frozen: false, .. }
                | CqlType::Set { frozen: false, .. }
                | CqlType::Map { frozen: false, .. }
                | CqlType::Udt { frozen: false, .. }
        )
    }

    /// Whether this is a native (non-composite) type.
    pub fn is_native(&self) -> bool {
        !matches!(
            self,
            CqlType::List { .. }
                | CqlType::Set { .. }
                | CqlType::Map { .. }
                | CqlType::Tuple(_)
                | CqlType::Udt { .. }
                | CqlType::Vector { .. }
        )
    }

    /// Whether this is a list, set or map, frozen or not.
    pub fn is_collection(&self) -> bool {
        matches!(
            self,
            CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }
        )
    }

    /// The same type frozen (its value one cell); nested types unchanged,
    /// since anything inside a collection is frozen already.
    pub fn frozen(&self) -> CqlType {
        match self {
            CqlType::List { element, .. } => CqlType::List {
                element: element.clone(),
                frozen: true,
            },
            CqlType::Set { element, .. } => CqlType::Set {
                element: element.clone(),
                frozen: true,
            },
            CqlType::Map { key, value, .. } => CqlType::Map {
                key: key.clone(),
                value: value.clone(),
                frozen: true,
            },
            CqlType::Udt { def, .. } => CqlType::Udt {
                def: def.clone(),
                frozen: true,
            },
            other => other.clone(),
        }
    }

    /// Whether a `duration` appears anywhere in this type (Cassandra refuses
    /// those in keys, set elements and map keys: durations have no order).
    pub fn references_duration(&self) -> bool {
        self.any(&|t| matches!(t, CqlType::Duration))
    }

    /// Calls `f` on this type and every type nested in it, outermost first
    /// (a UDT before its fields' types).
    pub fn visit(&self, f: &mut dyn FnMut(&CqlType)) {
        f(self);
        match self {
            CqlType::List { element, .. }
            | CqlType::Set { element, .. }
            | CqlType::Vector { element, .. } => element.visit(f),
            CqlType::Map { key, value, .. } => {
                key.visit(f);
                value.visit(f);
            }
            CqlType::Tuple(items) => items.iter().for_each(|t| t.visit(f)),
            CqlType::Udt { def, .. } => def.fields.iter().for_each(|(_, t)| t.visit(f)),
            _ => {}
        }
    }

    /// Whether `pred` holds for this type or any type nested in it.
    pub fn any(&self, pred: &dyn Fn(&CqlType) -> bool) -> bool {
        let mut found = false;
        self.visit(&mut |t| found |= pred(t));
        found
    }

    /// Every user-defined type in this type, outermost first.
    pub fn udts(&self) -> Vec<Arc<UdtDef>> {
        let mut out = Vec::new();
        self.visit(&mut |t| {
            if let CqlType::Udt { def, .. } = t {
                out.push(def.clone());
            }
        });
        out
    }

    /// A self-contained spelling for files (an sstable's identity header):
    /// the CQL name for every type without a user-defined type in it, else
    /// the JSON form, which carries the UDTs' definitions. Read back by
    /// [`CqlType::from_descriptor`].
    pub fn descriptor(&self) -> String {
        if self.any(&|t| matches!(t, CqlType::Udt { .. })) {
            serde_json::to_string(self).unwrap_or_else(|_| self.name())
        } else {
            self.name()
        }
    }

    /// Reads a [`CqlType::descriptor`].
    pub fn from_descriptor(text: &str) -> Result<CqlType> {
        if text.starts_with('{') {
            return serde_json::from_str(text)
                .map_err(|e| Error::InvalidInput(format!("bad type descriptor: {e}")));
        }
        composite::parse_type_name(text)
    }
}

impl std::fmt::Display for CqlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// A CQL value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Boolean(bool),
    TinyInt(i8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Float(f32),
    Double(f64),
    Text(String),
    Ascii(String),
    Blob(Vec<u8>),
    Uuid([u8; 16]),
    TimeUuid([u8; 16]),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    /// Cassandra's encoding: days since the Unix epoch + 2^31.
    Date(u32),
    /// Two's complement, big-endian, minimal (as Java's `BigInteger.toByteArray`).
    Varint(Vec<u8>),
    /// `unscaled * 10^-scale`; `unscaled` is varint bytes.
    Decimal {
        scale: i32,
        unscaled: Vec<u8>,
    },
    /// 4 (IPv4) or 16 (IPv6) bytes.
    Inet(Vec<u8>),
    /// Nanoseconds since midnight, `0..86_400 * 10^9`.
    Time(i64),
    /// Cassandra's duration: the three parts never have opposite signs.
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    /// A counter's total.
    Counter(i64),
    /// Elements in list order.
    List(Vec<Value>),
    /// Elements distinct, in the element type's order.
    Set(Vec<Value>),
    /// Entries with distinct keys, in the key type's order.
    Map(Vec<(Value, Value)>),
    /// One entry per component; `None` is a null component.
    Tuple(Vec<Option<Value>>),
    /// One entry per field of the type, in field order, with its name;
    /// `None` is null. Trailing fields may be absent (read as null).
    Udt(Vec<(String, Option<Value>)>),
    /// Exactly the type's dimension of elements.
    Vector(Vec<Value>),
}

impl Value {
    /// The native type of a value of a native type; `None` for composite
    /// values, whose type (element types, UDT) the value does not carry.
    pub fn native_type(&self) -> Option<CqlType> {
        Some(match self {
            Value::Boolean(_) => CqlType::Boolean,
            Value::TinyInt(_) => CqlType::TinyInt,
            Value::SmallInt(_) => CqlType::SmallInt,
            Value::Int(_) => CqlType::Int,
            Value::BigInt(_) => CqlType::BigInt,
            Value::Float(_) => CqlType::Float,
            Value::Double(_) => CqlType::Double,
            Value::Text(_) => CqlType::Text,
            Value::Ascii(_) => CqlType::Ascii,
            Value::Blob(_) => CqlType::Blob,
            Value::Uuid(_) => CqlType::Uuid,
            Value::TimeUuid(_) => CqlType::TimeUuid,
            Value::Timestamp(_) => CqlType::Timestamp,
            Value::Date(_) => CqlType::Date,
            Value::Varint(_) => CqlType::Varint,
            Value::Decimal { .. } => CqlType::Decimal,
            Value::Inet(_) => CqlType::Inet,
            Value::Time(_) => CqlType::Time,
            Value::Duration { .. } => CqlType::Duration,
            Value::Counter(_) => CqlType::Counter,
            Value::List(_)
            | Value::Set(_)
            | Value::Map(_)
            | Value::Tuple(_)
            | Value::Udt(_)
            | Value::Vector(_) => return None,
        })
    }

    /// A short name of what kind of value this is, for messages: the native
    /// type's name, or `list`, `set`, `map`, `tuple`, `udt`, `vector`.
    pub fn kind_name(&self) -> String {
        match self {
            Value::List(_) => "list".into(),
            Value::Set(_) => "set".into(),
            Value::Map(_) => "map".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Udt(_) => "udt".into(),
            Value::Vector(_) => "vector".into(),
            v => v.native_type().map(|t| t.name()).unwrap_or_default(),
        }
    }

    /// Whether this value can be stored in a column of type `ty`: the same
    /// native type, or a composite value whose every part fits `ty`'s parts.
    pub fn fits(&self, ty: &CqlType) -> bool {
        composite::fits(self, ty)
    }
}

pub(crate) fn invalid(ty: &CqlType, text: &str, why: &str) -> Error {
    Error::InvalidInput(format!("invalid {} value '{text}': {why}", ty.name()))
}

fn invalid_bytes(ty: &CqlType, why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("invalid serialized {} value: {why}", ty.name()))
}

// ---------------------------------------------------------------------------
// Arbitrary-precision helpers (varint <-> decimal text), kept minimal on purpose:
// the only operations needed are x*10^k+d and divmod by 10^9.
// ---------------------------------------------------------------------------

/// Strips redundant sign-extension bytes; an empty slice means zero.
fn varint_minimal(b: &[u8]) -> &[u8] {
    if b.is_empty() {
        return &[0];
    }
    let mut i = 0;
    while i + 1 < b.len() {
        let (x, y) = (b[i], b[i + 1]);
        if (x == 0x00 && y < 0x80) || (x == 0xFF && y >= 0x80) {
            i += 1;
        } else {
            break;
        }
    }
    &b[i..]
}

fn negate_in_place(b: &mut [u8]) {
    for x in b.iter_mut() {
        *x = !*x;
    }
    for x in b.iter_mut().rev() {
        let (s, carry) = x.overflowing_add(1);
        *x = s;
        if !carry {
            break;
        }
    }
}

/// `-x` of a varint's bytes (two's complement, big-endian), minimal: one
/// sign byte more first, so negating the most negative value of a width
/// (`0x80`, -128) gives its positive (`0x00 0x80`, 128).
pub fn varint_negated(b: &[u8]) -> Vec<u8> {
    let b = varint_minimal(b);
    let mut out = Vec::with_capacity(b.len() + 1);
    out.push(if b[0] >= 0x80 { 0xFF } else { 0x00 });
    out.extend_from_slice(b);
    negate_in_place(&mut out);
    varint_minimal(&out).to_vec()
}

/// (negative, big-endian magnitude without leading zeros; empty for zero).
fn varint_to_sign_magnitude(b: &[u8]) -> (bool, Vec<u8>) {
    let b = varint_minimal(b);
    let neg = b[0] >= 0x80;
    let mut mag = b.to_vec();
    if neg {
        negate_in_place(&mut mag);
    }
    let lead = mag.iter().take_while(|&&x| x == 0).count();
    mag.drain(..lead);
    (neg, mag)
}

/// Random bytes from the operating system.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // A failing OS random source leaves zeros; uuid() then still returns a
    // valid (if predictable) v4 UUID, and list paths a fixed node, rather
    // than failing the write.
    let _ = getrandom::getrandom(&mut b);
    b
}

pub(crate) fn varint_from_sign_magnitude(neg: bool, mag: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(mag.len() + 1);
    out.push(0);
    out.extend_from_slice(mag);
    if neg && mag.iter().any(|&x| x != 0) {
        negate_in_place(&mut out);
    }
    varint_minimal(&out).to_vec()
}

/// ASCII decimal digits (already validated) to a big-endian magnitude.
pub(crate) fn digits_to_magnitude(digits: &[u8]) -> Vec<u8> {
    // Little-endian base-2^32 limbs; 9 decimal digits at a time fit a u32 multiplier.
    let mut limbs: Vec<u32> = Vec::with_capacity(digits.len() / 9 + 1);
    for chunk in digits.chunks(9) {
        let mul = 10u64.pow(chunk.len() as u32);
        let mut carry = chunk
            .iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        for limb in limbs.iter_mut() {
            let v = u64::from(*limb) * mul + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    let mut out: Vec<u8> = limbs.iter().rev().flat_map(|l| l.to_be_bytes()).collect();
    let lead = out.iter().take_while(|&&x| x == 0).count();
    out.drain(..lead);
    out
}

/// Big-endian magnitude to decimal digits ("0" for zero).
fn magnitude_to_digits(mag: &[u8]) -> String {
    let mut limbs: Vec<u32> = Vec::with_capacity(mag.len() / 4 + 1);
    for chunk in mag.rchunks(4) {
        let mut w = [0u8; 4];
        w[4 - chunk.len()..].copy_from_slice(chunk);
        limbs.push(u32::from_be_bytes(w));
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    if limbs.is_empty() {
        return "0".to_string();
    }
    let mut groups: Vec<u32> = Vec::new();
    while !limbs.is_empty() {
        let mut rem = 0u64;
        for limb in limbs.iter_mut().rev() {
            let v = (rem << 32) | u64::from(*limb);
            *limb = (v / 1_000_000_000) as u32;
            rem = v % 1_000_000_000;
        }
        groups.push(rem as u32);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut s = String::with_capacity(groups.len() * 9);
    let mut iter = groups.iter().rev();
    if let Some(first) = iter.next() {
        let _ = write!(s, "{first}");
    }
    for g in iter {
        let _ = write!(s, "{g:09}");
    }
    s
}

fn varint_to_string(b: &[u8]) -> String {
    let (neg, mag) = varint_to_sign_magnitude(b);
    let digits = magnitude_to_digits(&mag);
    if neg {
        format!("-{digits}")
    } else {
        digits
    }
}

/// Splits an optional sign off `text`.
pub(crate) fn split_sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

fn decimal_to_string(scale: i32, unscaled: &[u8]) -> String {
    let (neg, mag) = varint_to_sign_magnitude(unscaled);
    let digits = magnitude_to_digits(&mag);
    let mut s = String::with_capacity(digits.len() + 16);
    if neg {
        s.push('-');
    }
    // Java's `BigDecimal.toString`, as Cassandra prints a decimal: plain
    // unless the scale is negative or the exponent of the first digit is
    // below -6, then `d.dddE±n` (`1.5E+40`, `5E-41`); either parses back
    // to the same value and scale.
    let adjusted = digits.len() as i64 - 1 - i64::from(scale);
    if scale < 0 || adjusted < -6 {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let sign = if adjusted >= 0 { "+" } else { "" };
        let _ = write!(s, "{first}{point}{rest}E{sign}{adjusted}");
    } else if scale == 0 {
        s.push_str(&digits);
    } else {
        let scale = scale as usize;
        if digits.len() > scale {
            let (i, f) = digits.split_at(digits.len() - scale);
            let _ = write!(s, "{i}.{f}");
        } else {
            s.push_str("0.");
            s.push_str(&"0".repeat(scale - digits.len()));
            s.push_str(&digits);
        }
    }
    s
}

// ---------------------------------------------------------------------------
// Calendar (proleptic Gregorian, Howard Hinnant's civil algorithms)
// ---------------------------------------------------------------------------

pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

pub(crate) fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

pub(crate) const DATE_EPOCH: i64 = 1 << 31;
pub(crate) const MILLIS_PER_DAY: i64 = 86_400_000;

fn format_date(d: u32) -> String {
    let (y, m, day) = civil_from_days(i64::from(d) - DATE_EPOCH);
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{day:02}")
    } else {
        d.to_string()
    }
}

/// Microseconds since the Unix epoch as ISO-8601 UTC with microseconds
/// (`2026-11-30T12:00:00.123456Z`), how dumps and reports print times;
/// outside years 0-9999, the number itself.
pub fn iso8601_micros(micros: i64) -> String {
    const MICROS_PER_DAY: i64 = MILLIS_PER_DAY * 1000;
    let days = micros.div_euclid(MICROS_PER_DAY);
    let rem = micros.rem_euclid(MICROS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return micros.to_string();
    }
    let (secs, frac) = (rem / 1_000_000, rem % 1_000_000);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Microseconds since the Unix epoch as ISO-8601 UTC to the second.
pub fn iso8601_seconds_of_micros(micros: i64) -> String {
    iso8601_seconds(micros.div_euclid(1_000_000))
}

/// Seconds since the Unix epoch as ISO-8601 UTC (`2026-11-30T12:00:00Z`).
pub fn iso8601_seconds(seconds: i64) -> String {
    let micros = iso8601_micros(seconds.saturating_mul(1_000_000));
    match micros.strip_suffix("Z").and_then(|t| t.rsplit_once('.')) {
        Some((whole, _)) => format!("{whole}Z"),
        None => micros,
    }
}

fn format_timestamp(ms: i64) -> String {
    let days = ms.div_euclid(MILLIS_PER_DAY);
    let rem = ms.rem_euclid(MILLIS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return ms.to_string();
    }
    let (secs, millis) = (rem / 1000, rem % 1000);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

// ---------------------------------------------------------------------------
// Text literals
// ---------------------------------------------------------------------------

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

pub(crate) fn parse_hex(hex: &[u8], out: &mut [u8]) -> Option<()> {
    if hex.len() != out.len() * 2 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = (hex_val(pair[0])? << 4) | hex_val(pair[1])?;
    }
    Some(())
}

fn push_hex(s: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 15)] as char);
    }
}

fn format_uuid(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, range) in [0..4, 4..6, 6..8, 8..10, 10..16].into_iter().enumerate() {
        if i > 0 {
            s.push('-');
        }
        push_hex(&mut s, &u[range]);
    }
    s
}

fn format_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        // Debug is the shortest text that parses back to the same bits and, unlike
        // Display, switches to exponent form instead of printing 300 digits.
        format!("{f:?}")
    }
}

/// Formats a value as text that [`parse_value`] reads back to the same value.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::Boolean(b) => b.to_string(),
        Value::TinyInt(x) => x.to_string(),
        Value::SmallInt(x) => x.to_string(),
        Value::Int(x) => x.to_string(),
        Value::BigInt(x) => x.to_string(),
        Value::Float(x) => {
            if x.is_finite() {
                format!("{x:?}")
            } else {
                format_float(f64::from(*x))
            }
        }
        Value::Double(x) => format_float(*x),
        Value::Text(s) | Value::Ascii(s) => s.clone(),
        Value::Blob(b) => {
            let mut s = String::with_capacity(2 + b.len() * 2);
            s.push_str("0x");
            push_hex(&mut s, b);
            s
        }
        Value::Uuid(u) | Value::TimeUuid(u) => format_uuid(u),
        Value::Timestamp(ms) => format_timestamp(*ms),
        Value::Date(d) => format_date(*d),
        Value::Varint(b) => varint_to_string(b),
        Value::Decimal { scale, unscaled } => decimal_to_string(*scale, unscaled),
        Value::Inet(b) => match b.len() {
            4 => Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string(),
            16 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(b);
                Ipv6Addr::from(o).to_string()
            }
            // Not a valid inet; hex keeps the text unambiguous rather than panicking.
            _ => {
                let mut s = String::from("0x");
                push_hex(&mut s, b);
                s
            }
        },
        Value::Time(n) => temporal::format_time(*n),
        Value::Duration {
            months,
            days,
            nanos,
        } => temporal::format_duration(*months, *days, *nanos),
        Value::Counter(x) => x.to_string(),
        composite => composite::format(composite),
    }
}

// ---------------------------------------------------------------------------
// Native serialization
// ---------------------------------------------------------------------------

/// Appends Cassandra's native serialization of `v` to `out`.
pub fn serialize_into(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::TinyInt(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::SmallInt(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Int(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::BigInt(x) | Value::Timestamp(x) | Value::Time(x) | Value::Counter(x) => {
            out.extend_from_slice(&x.to_be_bytes())
        }
        Value::Float(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Double(x) => out.extend_from_slice(&x.to_be_bytes()),
        Value::Text(s) | Value::Ascii(s) => out.extend_from_slice(s.as_bytes()),
        Value::Blob(b) | Value::Inet(b) => out.extend_from_slice(b),
        Value::Uuid(u) | Value::TimeUuid(u) => out.extend_from_slice(u),
        Value::Date(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Varint(b) => out.extend_from_slice(varint_minimal(b)),
        Value::Decimal { scale, unscaled } => {
            out.extend_from_slice(&scale.to_be_bytes());
            out.extend_from_slice(varint_minimal(unscaled));
        }
        Value::Duration {
            months,
            days,
            nanos,
        } => temporal::serialize_duration(*months, *days, *nanos, out),
        composite => composite::serialize(composite, out),
    }
}

/// Cassandra's native serialization of `v`.
pub fn serialize(v: &Value) -> Vec<u8> {
    // Exact for every type (an upper bound for varints), so the buffer is
    // never regrown: a 34-byte blob in a 16-byte first guess was a realloc
    // per cell of every write (BENCHMARKS.md, "Write path (issue 15)").
    let capacity = match v {
        Value::Text(s) | Value::Ascii(s) => s.len(),
        Value::Blob(b) | Value::Inet(b) | Value::Varint(b) => b.len(),
        Value::Decimal { unscaled, .. } => 4 + unscaled.len(),
        _ => v.native_type().and_then(|t| t.fixed_size()).unwrap_or(16),
    };
    let mut out = Vec::with_capacity(capacity);
    serialize_into(v, &mut out);
    out
}

fn array<const N: usize>(ty: &CqlType, bytes: &[u8]) -> Result<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| invalid_bytes(ty, format_args!("expected {N} bytes, got {}", bytes.len())))
}

/// Checks that `bytes` is a well-formed serialization of a `ty` value.
pub fn validate(ty: &CqlType, bytes: &[u8]) -> Result<()> {
    if let Some(n) = ty.fixed_size() {
        if bytes.len() != n {
            return Err(invalid_bytes(
                ty,
                format_args!("expected {n} bytes, got {}", bytes.len()),
            ));
        }
    }
    match ty {
        CqlType::Text => std::str::from_utf8(bytes)
            .map(|_| ())
            .map_err(|e| invalid_bytes(ty, e)),
        CqlType::Ascii => match bytes.iter().position(|b| !b.is_ascii()) {
            Some(i) => Err(invalid_bytes(ty, format_args!("non-ASCII byte at {i}"))),
            None => Ok(()),
        },
        CqlType::TimeUuid if bytes[6] >> 4 != 1 => {
            Err(invalid_bytes(ty, "a timeuuid must be a version 1 UUID"))
        }
        CqlType::Varint if bytes.is_empty() => Err(invalid_bytes(ty, "empty varint")),
        CqlType::Decimal if bytes.len() < 5 => Err(invalid_bytes(
            ty,
            "expected a 4-byte scale and at least 1 unscaled byte",
        )),
        CqlType::Inet if bytes.len() != 4 && bytes.len() != 16 => Err(invalid_bytes(
            ty,
            format_args!("expected 4 or 16 bytes, got {}", bytes.len()),
        )),
        CqlType::Time => {
            let n = i64::from_be_bytes(array(ty, bytes)?);
            if (0..temporal::NANOS_PER_DAY).contains(&n) {
                Ok(())
            } else {
                Err(invalid_bytes(
                    ty,
                    format_args!("{n} nanoseconds is not a time of day"),
                ))
            }
        }
        CqlType::Duration => temporal::deserialize_duration(bytes)
            .map(|_| ())
            .map_err(|why| invalid_bytes(ty, why)),
        CqlType::List { .. }
        | CqlType::Set { .. }
        | CqlType::Map { .. }
        | CqlType::Tuple(_)
        | CqlType::Udt { .. }
        | CqlType::Vector { .. } => composite::deserialize(ty, bytes).map(|_| ()),
        _ => Ok(()),
    }
}

/// Decodes Cassandra's native serialization of a `ty` value.
pub fn deserialize(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    // A composite value is validated by decoding it: once, not twice.
    if !ty.is_native() {
        return composite::deserialize(ty, bytes);
    }
    validate(ty, bytes)?;
    Ok(match ty {
        CqlType::Boolean => Value::Boolean(bytes[0] != 0),
        CqlType::TinyInt => Value::TinyInt(i8::from_be_bytes(array(ty, bytes)?)),
        CqlType::SmallInt => Value::SmallInt(i16::from_be_bytes(array(ty, bytes)?)),
        CqlType::Int => Value::Int(i32::from_be_bytes(array(ty, bytes)?)),
        CqlType::BigInt => Value::BigInt(i64::from_be_bytes(array(ty, bytes)?)),
        CqlType::Float => Value::Float(f32::from_be_bytes(array(ty, bytes)?)),
        CqlType::Double => Value::Double(f64::from_be_bytes(array(ty, bytes)?)),
        // validate() has checked UTF-8 / ASCII; from_utf8 re-checks cheaply but safely.
        CqlType::Text => Value::Text(
            String::from_utf8(bytes.to_vec()).map_err(|e| invalid_bytes(ty, e.utf8_error()))?,
        ),
        CqlType::Ascii => Value::Ascii(
            String::from_utf8(bytes.to_vec()).map_err(|e| invalid_bytes(ty, e.utf8_error()))?,
        ),
        CqlType::Blob => Value::Blob(bytes.to_vec()),
        CqlType::Uuid => Value::Uuid(array(ty, bytes)?),
        CqlType::TimeUuid => Value::TimeUuid(array(ty, bytes)?),
        CqlType::Timestamp => Value::Timestamp(i64::from_be_bytes(array(ty, bytes)?)),
        CqlType::Date => Value::Date(u32::from_be_bytes(array(ty, bytes)?)),
        CqlType::Varint => Value::Varint(varint_minimal(bytes).to_vec()),
        CqlType::Decimal => Value::Decimal {
            scale: i32::from_be_bytes(array(ty, &bytes[..4])?),
            unscaled: varint_minimal(&bytes[4..]).to_vec(),
        },
        CqlType::Inet => Value::Inet(bytes.to_vec()),
        CqlType::Time => Value::Time(i64::from_be_bytes(array(ty, bytes)?)),
        CqlType::Counter => Value::Counter(i64::from_be_bytes(array(ty, bytes)?)),
        CqlType::Duration => {
            let (months, days, nanos) =
                temporal::deserialize_duration(bytes).map_err(|why| invalid_bytes(ty, why))?;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        // Unreachable: composite types returned above.
        composite => return composite::deserialize(composite, bytes),
    })
}

// ---------------------------------------------------------------------------
// Byte-comparable encoding
// ---------------------------------------------------------------------------

/// Escape for 0x00 inside a terminated byte string; the terminator is 0x00 0x00.
const ESCAPED_ZERO: u8 = 0xFF;

fn encode_bytes(b: &[u8], out: &mut Vec<u8>) {
    out.reserve(b.len() + 2);
    let mut rest = b;
    while let Some(i) = rest.iter().position(|&x| x == 0) {
        out.extend_from_slice(&rest[..=i]);
        out.push(ESCAPED_ZERO);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0, 0]);
}

fn float_key(bits: u32, nan: bool) -> u32 {
    // Java's Float.compare treats every NaN as the one canonical, positive NaN.
    let b = if nan { 0x7fc0_0000 } else { bits };
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

fn double_key(bits: u64, nan: bool) -> u64 {
    let b = if nan { 0x7ff8_0000_0000_0000 } else { bits };
    if b & (1 << 63) != 0 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// Version nibble first, so uuids of different versions never interleave, then for
/// v1 the 60-bit timestamp (time_hi, time_mid, time_low), else the other 60 msb bits
/// in their original order: both equal `UUIDType`'s comparison.
fn uuid_msb_key(msb: u64) -> u64 {
    let version = (msb >> 12) & 0xf;
    if version == 1 {
        (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32)
    } else {
        (version << 60) | ((msb >> 16) << 12) | (msb & 0xFFF)
    }
}

fn uuid_msb_unkey(key: u64) -> u64 {
    let version = key >> 60;
    if version == 1 {
        (key << 32) | ((key >> 16) & 0xFFFF_0000) | (key >> 48)
    } else {
        ((key >> 12 & 0xFFFF_FFFF_FFFF) << 16) | (version << 12) | (key & 0xFFF)
    }
}

/// Header of a comparable varint of `len` two's-complement bytes: larger for longer
/// non-negative numbers; negatives use the bitwise complement so longer sorts lower.
fn varint_header(neg: bool, len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    if len < 0x7F {
        out.push(0x80 + len as u8);
    } else {
        out.push(0xFF);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    if neg {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn encode_varint(b: &[u8], out: &mut Vec<u8>) {
    let b = varint_minimal(b);
    // Within a length, two's complement bytes already compare as unsigned numbers.
    varint_header(b[0] >= 0x80, b.len(), out);
    out.extend_from_slice(b);
}

/// Bound on the digits a decoded decimal may expand to, so corrupt input cannot
/// request a huge allocation; Cassandra caps clustering values at 64 KiB, i.e. about
/// 158k digits, far below this.
const MAX_DECIMAL_DIGITS: usize = 1 << 20;

/// Most trailing zeros the canonical spelling of an integral decimal writes out in
/// plain notation (`100`, not `1E+2`); beyond it the canonical value keeps a
/// negative scale (`1E+100`). 64 covers every integer a person writes out in full
/// (`u128::MAX` has 39 digits) and bounds what decoding adds to the stored digits by
/// a constant, so a 10-byte `1E+1000000000` can never decode to a billion digits.
pub const MAX_PLAIN_TRAILING_ZEROS: i64 = 64;

const DEC_NEG: u8 = 0x01;
const DEC_ZERO: u8 = 0x02;
const DEC_POS: u8 = 0x03;

/// Decimal as sign, then (for non-zero) `0.D * 10^E` with D stripped of trailing
/// zeros: E as a flipped i64, D packed two digits a byte (1..=100), terminator 0x00;
/// all of that inverted for negatives. `(sign, D, E)` is unique per numeric value,
/// so value-equal decimals (`1.5`, `1.50`, `15E-1`) encode to identical bytes, as
/// Cassandra's `DecimalType` compares them equal (see [`canonical`] for the one
/// value they all decode to).
///
/// Format note: before this encoding was made canonical, a flipped big-endian i32
/// scale (4 bytes) followed the terminator (after the sign byte, for zero) to keep
/// value-equal decimals distinct. Those 4 bytes are all that changed.
fn encode_decimal(scale: i32, unscaled: &[u8], out: &mut Vec<u8>) {
    let (neg, mag) = varint_to_sign_magnitude(unscaled);
    if mag.is_empty() {
        out.push(DEC_ZERO);
        return;
    }
    let digits = magnitude_to_digits(&mag);
    let d = digits.trim_end_matches('0').as_bytes();
    let e = digits.len() as i64 - i64::from(scale);
    out.push(if neg { DEC_NEG } else { DEC_POS });
    let start = out.len();
    out.extend_from_slice(&((e as u64) ^ (1 << 63)).to_be_bytes());
    for pair in d.chunks(2) {
        let hi = pair[0] - b'0';
        let lo = pair.get(1).map_or(0, |c| c - b'0');
        out.push(1 + hi * 10 + lo);
    }
    out.push(0);
    if neg {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// The canonical `(scale, unscaled)` of the non-zero value `±D * 10^k`, where the
/// ASCII digits `d` have no leading or trailing zero (module contract, "Decimal
/// canonical form"): scale 0 for an integer needing at most
/// [`MAX_PLAIN_TRAILING_ZEROS`] zeros written out, else the scale that keeps the
/// fewest digits, clamped into the i32 range (padding zeros back when the stripped
/// scale would underflow it). `None` when no valid decimal has that value.
fn canonical_decimal_parts(neg: bool, d: &[u8], k: i64) -> Option<(i32, Vec<u8>)> {
    let (scale, zeros) = if (0..=MAX_PLAIN_TRAILING_ZEROS).contains(&k) {
        (0, k)
    } else if k > 0 && -k < i64::from(i32::MIN) {
        (i32::MIN, k.checked_add(i64::from(i32::MIN))?)
    } else {
        (i32::try_from(k.checked_neg()?).ok()?, 0)
    };
    let zeros = usize::try_from(zeros).ok()?;
    if zeros.saturating_add(d.len()) > MAX_DECIMAL_DIGITS {
        return None;
    }
    let mut digits = d.to_vec();
    digits.resize(d.len() + zeros, b'0');
    Some((
        scale,
        varint_from_sign_magnitude(neg, &digits_to_magnitude(&digits)),
    ))
}

/// The one value of each class of values that Cassandra's comparator holds equal:
/// what [`decode_comparable`] returns for `v`. Only decimals (and NaNs, which
/// become the one canonical NaN) have such classes; every other value is returned
/// unchanged. For a decimal: trailing zeros of the
/// unscaled value stripped, except that an integer is written without exponent
/// when that takes at most [`MAX_PLAIN_TRAILING_ZEROS`] zeros; zero is `0` (scale
/// 0). So `1.50` → `1.5`, `0.00` → `0`, `1E+2` → `100`, `-7.0E+1` → `-70`,
/// `1E+100` → `1E+100`.
pub fn canonical(v: &Value) -> Value {
    let (scale, unscaled) = match v {
        Value::Decimal { scale, unscaled } => (scale, unscaled),
        // NaN payloads are not kept either (see the deviations above).
        Value::Float(x) if x.is_nan() => return Value::Float(f32::NAN),
        Value::Double(x) if x.is_nan() => return Value::Double(f64::NAN),
        composite if composite.native_type().is_none() => return composite::canonical(composite),
        _ => return v.clone(),
    };
    let (neg, mag) = varint_to_sign_magnitude(unscaled);
    if mag.is_empty() {
        return Value::Decimal {
            scale: 0,
            unscaled: vec![0],
        };
    }
    let digits = magnitude_to_digits(&mag);
    let d = digits.trim_end_matches('0');
    let k = (digits.len() - d.len()) as i64 - i64::from(*scale);
    match canonical_decimal_parts(neg, d.as_bytes(), k) {
        Some((scale, unscaled)) => Value::Decimal { scale, unscaled },
        // Unreachable for a valid value (its own digits bound the padding); keep it
        // as it is rather than fail.
        None => v.clone(),
    }
}

/// Appends the byte-comparable encoding of `v` (see the module invariants 3-6).
pub fn encode_comparable(v: &Value, descending: bool, out: &mut Vec<u8>) {
    let start = out.len();
    match v {
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::TinyInt(x) => out.push((*x as u8) ^ 0x80),
        Value::SmallInt(x) => out.extend_from_slice(&((*x as u16) ^ 0x8000).to_be_bytes()),
        Value::Int(x) => out.extend_from_slice(&((*x as u32) ^ (1 << 31)).to_be_bytes()),
        Value::BigInt(x) | Value::Timestamp(x) | Value::Time(x) | Value::Counter(x) => {
            out.extend_from_slice(&((*x as u64) ^ (1 << 63)).to_be_bytes())
        }
        Value::Float(x) => out.extend_from_slice(&float_key(x.to_bits(), x.is_nan()).to_be_bytes()),
        Value::Double(x) => {
            out.extend_from_slice(&double_key(x.to_bits(), x.is_nan()).to_be_bytes())
        }
        Value::Text(s) | Value::Ascii(s) => encode_bytes(s.as_bytes(), out),
        Value::Blob(b) => encode_bytes(b, out),
        Value::Uuid(u) => {
            let msb = u64::from_be_bytes(first8(u));
            out.extend_from_slice(&uuid_msb_key(msb).to_be_bytes());
            out.extend_from_slice(&u[8..]);
        }
        Value::TimeUuid(u) => {
            let msb = u64::from_be_bytes(first8(u));
            out.extend_from_slice(&uuid_msb_key(msb).to_be_bytes());
            // TimeUUIDType compares the low bytes as signed Java bytes.
            out.extend(u[8..].iter().map(|b| b ^ 0x80));
        }
        Value::Date(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::Varint(b) => encode_varint(b, out),
        Value::Decimal { scale, unscaled } => encode_decimal(*scale, unscaled, out),
        Value::Inet(b) => {
            // Cassandra compares inet bytes unsigned, so an IPv4 address sorts like a
            // 4-byte prefix of IPv6 space: a marker after 4 bytes (0 = end) keeps that
            // order while making the encoding self-delimiting.
            let head = b.len().min(4);
            out.extend_from_slice(&b[..head]);
            out.resize(out.len() + 4 - head, 0);
            if b.len() > 4 {
                out.push(1);
                out.extend_from_slice(&b[4..]);
            } else {
                out.push(0);
            }
        }
        // Durations have no order (Cassandra refuses them in keys); their
        // parts keep the encoding exact for equality.
        Value::Duration {
            months,
            days,
            nanos,
        } => {
            out.extend_from_slice(&((*months as u32) ^ (1 << 31)).to_be_bytes());
            out.extend_from_slice(&((*days as u32) ^ (1 << 31)).to_be_bytes());
            out.extend_from_slice(&((*nanos as u64) ^ (1 << 63)).to_be_bytes());
        }
        composite => composite::encode(composite, out),
    }
    if descending {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn first8(u: &[u8; 16]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&u[..8]);
    a
}

/// Reads comparable bytes, undoing the descending inversion.
struct Reader<'a, 'b, 't> {
    input: &'a mut &'b [u8],
    mask: u8,
    ty: &'t CqlType,
}

impl<'b> Reader<'_, 'b, '_> {
    fn truncated(&self) -> Error {
        Error::InvalidInput(format!(
            "truncated comparable encoding of a {} value",
            self.ty.name()
        ))
    }

    fn corrupt(&self, why: &str) -> Error {
        Error::InvalidInput(format!(
            "malformed comparable encoding of a {} value: {why}",
            self.ty.name()
        ))
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.input.len() < N {
            return Err(self.truncated());
        }
        let (head, rest) = self.input.split_at(N);
        let mut a = [0u8; N];
        for (o, &b) in a.iter_mut().zip(head) {
            *o = b ^ self.mask;
        }
        *self.input = rest;
        Ok(a)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }

    fn take_vec(&mut self, n: usize) -> Result<Vec<u8>> {
        if self.input.len() < n {
            return Err(self.truncated());
        }
        let (head, rest) = self.input.split_at(n);
        *self.input = rest;
        Ok(head.iter().map(|b| b ^ self.mask).collect())
    }

    /// Reads an escaped, 0x00 0x00-terminated byte string.
    fn escaped(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let zero = self.mask;
        let mut rest: &'b [u8] = self.input;
        loop {
            let i = rest
                .iter()
                .position(|&b| b == zero)
                .ok_or_else(|| self.truncated())?;
            out.extend(rest[..i].iter().map(|b| b ^ self.mask));
            match rest.get(i + 1).map(|b| b ^ self.mask) {
                Some(0) => {
                    rest = &rest[i + 2..];
                    break;
                }
                Some(ESCAPED_ZERO) => {
                    out.push(0);
                    rest = &rest[i + 2..];
                }
                Some(_) => return Err(self.corrupt("bad escape after 0x00")),
                None => return Err(self.truncated()),
            }
        }
        *self.input = rest;
        Ok(out)
    }
}

fn decode_decimal(r: &mut Reader) -> Result<Value> {
    let sign = r.byte()?;
    let neg = match sign {
        DEC_ZERO => {
            return Ok(Value::Decimal {
                scale: 0,
                unscaled: vec![0],
            })
        }
        DEC_NEG => true,
        DEC_POS => false,
        _ => return Err(r.corrupt("bad sign byte")),
    };
    // The body of a negative is inverted on top of any descending mask.
    let saved = r.mask;
    if neg {
        r.mask = !r.mask;
    }
    let e = (u64::from_be_bytes(r.take::<8>()?) ^ (1 << 63)) as i64;
    let mut digits = Vec::new();
    loop {
        match r.byte()? {
            0 => break,
            b @ 1..=100 => {
                if digits.len() >= MAX_DECIMAL_DIGITS {
                    return Err(r.corrupt("too many digits"));
                }
                digits.push(b'0' + (b - 1) / 10);
                digits.push(b'0' + (b - 1) % 10);
            }
            _ => return Err(r.corrupt("bad digit pair")),
        }
    }
    r.mask = saved;
    if digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() || digits[0] == b'0' || digits.last() == Some(&b'0') {
        return Err(r.corrupt("digits not normalised"));
    }
    // The value is 0.D * 10^E = D * 10^(E - len(D)).
    let (scale, unscaled) = e
        .checked_sub(digits.len() as i64)
        .and_then(|k| canonical_decimal_parts(neg, &digits, k))
        .ok_or_else(|| r.corrupt("exponent out of the range of a decimal"))?;
    Ok(Value::Decimal { scale, unscaled })
}

/// Decodes one comparable-encoded `ty` value from the front of `input`, advancing it.
pub fn decode_comparable(ty: &CqlType, descending: bool, input: &mut &[u8]) -> Result<Value> {
    let mut r = Reader {
        input,
        mask: if descending { 0xFF } else { 0 },
        ty,
    };
    Ok(match ty {
        CqlType::Boolean => match r.byte()? {
            0 => Value::Boolean(false),
            1 => Value::Boolean(true),
            _ => return Err(r.corrupt("boolean byte not 0 or 1")),
        },
        CqlType::TinyInt => Value::TinyInt((r.byte()? ^ 0x80) as i8),
        CqlType::SmallInt => Value::SmallInt((u16::from_be_bytes(r.take()?) ^ 0x8000) as i16),
        CqlType::Int => Value::Int((u32::from_be_bytes(r.take()?) ^ (1 << 31)) as i32),
        CqlType::BigInt => Value::BigInt((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        CqlType::Timestamp => Value::Timestamp((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        CqlType::Time => Value::Time((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        CqlType::Counter => Value::Counter((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        CqlType::Duration => {
            let months = (u32::from_be_bytes(r.take()?) ^ (1 << 31)) as i32;
            let days = (u32::from_be_bytes(r.take()?) ^ (1 << 31)) as i32;
            let nanos = (u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        CqlType::Float => {
            let k = u32::from_be_bytes(r.take()?);
            let bits = if k & 0x8000_0000 != 0 {
                k & 0x7fff_ffff
            } else {
                !k
            };
            Value::Float(f32::from_bits(bits))
        }
        CqlType::Double => {
            let k = u64::from_be_bytes(r.take()?);
            let bits = if k & (1 << 63) != 0 {
                k & !(1 << 63)
            } else {
                !k
            };
            Value::Double(f64::from_bits(bits))
        }
        CqlType::Text => {
            Value::Text(String::from_utf8(r.escaped()?).map_err(|_| r.corrupt("invalid UTF-8"))?)
        }
        CqlType::Ascii => {
            let b = r.escaped()?;
            if !b.is_ascii() {
                return Err(r.corrupt("non-ASCII byte"));
            }
            Value::Ascii(String::from_utf8(b).map_err(|_| r.corrupt("invalid UTF-8"))?)
        }
        CqlType::Blob => Value::Blob(r.escaped()?),
        CqlType::Uuid | CqlType::TimeUuid => {
            let msb = uuid_msb_unkey(u64::from_be_bytes(r.take()?));
            let mut u = [0u8; 16];
            u[..8].copy_from_slice(&msb.to_be_bytes());
            let lsb: [u8; 8] = r.take()?;
            if *ty == CqlType::TimeUuid {
                for (o, b) in u[8..].iter_mut().zip(lsb) {
                    *o = b ^ 0x80;
                }
                Value::TimeUuid(u)
            } else {
                u[8..].copy_from_slice(&lsb);
                Value::Uuid(u)
            }
        }
        CqlType::Date => Value::Date(u32::from_be_bytes(r.take()?)),
        CqlType::Varint => {
            let h = r.byte()?;
            let neg = h < 0x80;
            let h = if neg { !h } else { h };
            let len = if h == 0xFF {
                let raw = u64::from_be_bytes(r.take()?);
                let raw = if neg { !raw } else { raw };
                usize::try_from(raw).map_err(|_| r.corrupt("length overflow"))?
            } else {
                usize::from(h - 0x80)
            };
            let b = r.take_vec(len)?;
            if b.is_empty() || (b[0] >= 0x80) != neg || varint_minimal(&b).len() != b.len() {
                return Err(r.corrupt("varint bytes disagree with header"));
            }
            Value::Varint(b)
        }
        CqlType::Decimal => decode_decimal(&mut r)?,
        CqlType::Inet => {
            let head: [u8; 4] = r.take()?;
            match r.byte()? {
                0 => Value::Inet(head.to_vec()),
                1 => {
                    let mut b = head.to_vec();
                    b.extend_from_slice(&r.take::<12>()?);
                    Value::Inet(b)
                }
                _ => return Err(r.corrupt("bad inet family marker")),
            }
        }
        composite => return composite::decode(composite, descending, r.input),
    })
}

/// Concatenated comparable encodings of clustering values (`(value, descending)`).
pub fn encode_clustering(values: &[(&Value, bool)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 10);
    for (v, desc) in values {
        encode_comparable(v, *desc, &mut out);
    }
    out
}

/// Decodes a clustering key or a clustering prefix (fewer components than `types`).
pub fn decode_clustering(types: &[(CqlType, bool)], bytes: &[u8]) -> Result<Vec<Value>> {
    let mut input = bytes;
    let mut out = Vec::with_capacity(types.len());
    for (ty, desc) in types {
        if input.is_empty() {
            break;
        }
        out.push(decode_comparable(ty, *desc, &mut input)?);
    }
    if !input.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{} trailing bytes after {} clustering components",
            input.len(),
            types.len()
        )));
    }
    Ok(out)
}

/// Rewrites a clustering (or clustering prefix) encoded by the format before
/// decimals compared by value into today's canonical encoding: every decimal
/// component loses the 4-byte scale suffix it then carried (see
/// `encode_decimal`); every other byte is kept. For an upgrade path
/// (`upgradesstables`, commit-log replay) of tables with decimal clustering
/// columns. Two legacy keys differing only in a decimal's scale (`1.5`, `1.50`)
/// become the same key, so a rewriter must reconcile such rows (they were adjacent
/// in the legacy order, which sorted equal values by scale).
pub fn legacy_clustering_to_canonical(types: &[(CqlType, bool)], bytes: &[u8]) -> Result<Vec<u8>> {
    const LEGACY_SCALE_BYTES: usize = 4;
    let mut input = bytes;
    let mut out = Vec::with_capacity(bytes.len());
    for (ty, desc) in types {
        if input.is_empty() {
            break;
        }
        let before = input;
        decode_comparable(ty, *desc, &mut input)?;
        out.extend_from_slice(&before[..before.len() - input.len()]);
        if *ty == CqlType::Decimal {
            if input.len() < LEGACY_SCALE_BYTES {
                return Err(Error::InvalidInput(
                    "truncated legacy decimal clustering: the 4-byte scale suffix is missing"
                        .to_string(),
                ));
            }
            input = &input[LEGACY_SCALE_BYTES..];
        }
    }
    if !input.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{} trailing bytes after {} legacy clustering components",
            input.len(),
            types.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cql::literal::{parse_value, parse_varint};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    const ALL_TYPES: [CqlType; 17] = [
        CqlType::Boolean,
        CqlType::TinyInt,
        CqlType::SmallInt,
        CqlType::Int,
        CqlType::BigInt,
        CqlType::Float,
        CqlType::Double,
        CqlType::Text,
        CqlType::Ascii,
        CqlType::Blob,
        CqlType::Uuid,
        CqlType::TimeUuid,
        CqlType::Timestamp,
        CqlType::Date,
        CqlType::Varint,
        CqlType::Decimal,
        CqlType::Inet,
    ];

    fn enc(v: &Value, desc: bool) -> Vec<u8> {
        let mut out = Vec::new();
        encode_comparable(v, desc, &mut out);
        out
    }

    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Float(x), Value::Float(y)) => {
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
            }
            (Value::Double(x), Value::Double(y)) => {
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
            }
            _ => a == b,
        }
    }

    fn err_text(r: Result<Value>) -> String {
        match r {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    /// Round-trips one value through every codec.
    fn round_trip(v: &Value) {
        round_trip_as(v, &v.native_type().expect("a native value"));
    }

    /// Round-trips one value of type `ty` through every codec.
    fn round_trip_as(v: &Value, ty: &CqlType) {
        let text = format_value(v);
        assert!(
            same(&parse_value(ty, &text).unwrap(), v),
            "text {text:?} of {v:?}"
        );
        let bytes = serialize(v);
        validate(ty, &bytes).unwrap();
        assert!(same(&deserialize(ty, &bytes).unwrap(), v), "bytes of {v:?}");
        let canon = canonical(v);
        assert!(canon.fits(ty));
        for desc in [false, true] {
            let mut e = enc(v, desc);
            assert_eq!(
                e,
                enc(&canon, desc),
                "canonical {canon:?} of {v:?} encodes alike"
            );
            e.extend_from_slice(b"\x42tail");
            let mut input = &e[..];
            let got = decode_comparable(ty, desc, &mut input).unwrap();
            // Bit-exact for NaN too: decoding yields the one canonical NaN.
            let bit_same = match (&got, &canon) {
                (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
                (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
                _ => got == canon,
            };
            assert!(
                bit_same,
                "comparable {v:?} desc={desc} -> {got:?}, expected {canon:?}"
            );
            assert_eq!(input, b"\x42tail", "consumed exactly one encoding of {v:?}");
        }
    }

    /// The order, descending and prefix-freeness properties for one pair.
    fn check_pair(a: &Value, b: &Value, expected: Ordering) {
        round_trip(a);
        round_trip(b);
        let (ea, eb) = (enc(a, false), enc(b, false));
        assert_eq!(ea.cmp(&eb), expected, "{a:?} vs {b:?}: {ea:02x?} {eb:02x?}");
        let (da, db) = (enc(a, true), enc(b, true));
        assert_eq!(da.cmp(&db), expected.reverse(), "desc {a:?} vs {b:?}");
        assert!(da.iter().zip(&ea).all(|(d, a)| *d == !*a));
        if ea != eb {
            assert!(
                !ea.starts_with(&eb) && !eb.starts_with(&ea),
                "prefix: {a:?} {b:?}"
            );
            assert!(
                !da.starts_with(&db) && !db.starts_with(&da),
                "desc prefix: {a:?} {b:?}"
            );
        }
    }

    fn varint_of(x: i128) -> Vec<u8> {
        let b = x.to_be_bytes();
        varint_minimal(&b).to_vec()
    }

    fn i128_of(b: &[u8]) -> i128 {
        let fill = if b[0] >= 0x80 { 0xFF } else { 0 };
        let mut w = [fill; 16];
        w[16 - b.len()..].copy_from_slice(b);
        i128::from_be_bytes(w)
    }

    // ---- Cassandra reference comparators, transcribed from the Java sources ----

    fn reorder(msb: u64) -> i64 {
        ((msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32)) as i64
    }

    fn cassandra_uuid_cmp(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
        let (ma, mb) = (u64::from_be_bytes(first8(a)), u64::from_be_bytes(first8(b)));
        let (va, vb) = ((ma >> 12) & 0xf, (mb >> 12) & 0xf);
        let lsb = |u: &[u8; 16]| u64::from_be_bytes(u[8..].try_into().unwrap());
        va.cmp(&vb)
            .then_with(|| {
                if va == 1 {
                    reorder(ma).cmp(&reorder(mb))
                } else {
                    ma.cmp(&mb)
                }
            })
            .then_with(|| lsb(a).cmp(&lsb(b)))
    }

    fn cassandra_timeuuid_cmp(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
        let (ma, mb) = (u64::from_be_bytes(first8(a)), u64::from_be_bytes(first8(b)));
        let lsb = |u: &[u8; 16]| {
            (u64::from_be_bytes(u[8..].try_into().unwrap()) ^ 0x0080_8080_8080_8080) as i64
        };
        reorder(ma)
            .cmp(&reorder(mb))
            .then_with(|| lsb(a).cmp(&lsb(b)))
    }

    fn canon32(x: f32) -> f32 {
        if x.is_nan() {
            f32::NAN
        } else {
            x
        }
    }

    fn canon64(x: f64) -> f64 {
        if x.is_nan() {
            f64::NAN
        } else {
            x
        }
    }

    /// Compares decimal-digit strings with optional '-' numerically.
    fn digit_string_cmp(a: &str, b: &str) -> Ordering {
        let norm = |s: &str| {
            let (neg, d) = split_sign(s);
            let d = d.trim_start_matches('0').to_string();
            (neg && !d.is_empty(), d)
        };
        let ((na, da), (nb, db)) = (norm(a), norm(b));
        let mag = da.len().cmp(&db.len()).then_with(|| da.cmp(&db));
        match (na, nb) {
            (false, false) => mag,
            (true, true) => mag.reverse(),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
        }
    }

    /// Numeric comparison of `ua * 10^-sa` and `ub * 10^-sb`, via digit strings so
    /// that scales up to +-80 cannot overflow.
    fn decimal_cmp(ua: i64, sa: i32, ub: i64, sb: i32) -> Ordering {
        let m = sa.max(sb);
        let widen = |u: i64, s: i32| {
            if u == 0 {
                "0".to_string()
            } else {
                format!("{u}{}", "0".repeat((m - s) as usize))
            }
        };
        digit_string_cmp(&widen(ua, sa), &widen(ub, sb))
    }

    /// The canonical spelling of `u * 10^-s` as the module contract words it, built
    /// from strings (not from the codec's arithmetic).
    fn reference_canonical_text(u: i64, s: i32) -> String {
        if u == 0 {
            return "0".to_string();
        }
        let sign = if u < 0 { "-" } else { "" };
        let digits = u.unsigned_abs().to_string();
        let d = digits.trim_end_matches('0');
        // value = d * 10^k; the canonical (unscaled, scale): a plain integer
        // for a few trailing zeros, else the fewest digits (scale clamped).
        let k = (digits.len() - d.len()) as i64 - i64::from(s);
        let (unscaled, scale) = if (0..=MAX_PLAIN_TRAILING_ZEROS).contains(&k) {
            (format!("{d}{}", "0".repeat(k as usize)), 0)
        } else if k > 0 {
            let scale = (-k).max(i64::from(i32::MIN));
            (format!("{d}{}", "0".repeat((k + scale) as usize)), scale)
        } else {
            (d.to_string(), -k)
        };
        // Java's BigDecimal.toString of it.
        let adjusted = unscaled.len() as i64 - 1 - scale;
        if scale >= 0 && adjusted >= -6 {
            let frac = scale as usize;
            if frac == 0 {
                format!("{sign}{unscaled}")
            } else if unscaled.len() > frac {
                let (i, f) = unscaled.split_at(unscaled.len() - frac);
                format!("{sign}{i}.{f}")
            } else {
                format!("{sign}0.{}{unscaled}", "0".repeat(frac - unscaled.len()))
            }
        } else {
            let (first, rest) = unscaled.split_at(1);
            let point = if rest.is_empty() { "" } else { "." };
            let plus = if adjusted >= 0 { "+" } else { "" };
            format!("{sign}{first}{point}{rest}E{plus}{adjusted}")
        }
    }

    // ---- strategies ----

    fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![
                Just(0u8),
                Just(0xFFu8),
                Just(1u8),
                Just(0xFEu8),
                any::<u8>()
            ],
            0..12,
        )
    }

    fn uuid_strategy() -> impl Strategy<Value = [u8; 16]> {
        (
            any::<[u8; 16]>(),
            prop_oneof![Just(1u8), Just(4u8), 0u8..16],
        )
            .prop_map(|(mut u, v)| {
                u[6] = (u[6] & 0x0F) | (v << 4);
                u
            })
    }

    fn float_strategy() -> impl Strategy<Value = f32> {
        prop_oneof![
            any::<u32>().prop_map(f32::from_bits),
            prop::sample::select(vec![
                0.0f32,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                f32::MIN_POSITIVE,
                f32::MAX,
                f32::MIN,
                1.0,
                -1.0
            ]),
        ]
    }

    fn double_strategy() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            prop::sample::select(vec![
                0.0f64,
                -0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                -f64::NAN,
                f64::from_bits(1),
                f64::MAX,
                f64::MIN,
                1.0,
                -1.0
            ]),
        ]
    }

    fn digits_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<i64>().prop_map(|x| x.to_string()),
            (any::<bool>(), "[0-9]{1,60}")
                .prop_map(|(n, d)| format!("{}{d}", if n { "-" } else { "" })),
            prop::sample::select(vec![
                "0", "-0", "127", "128", "-128", "-129", "255", "256", "-256", "-257"
            ])
            .prop_map(str::to_string),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn prop_integers(a: i64, b: i64, x: i8, y: i8, s: i16, t: i16, i: i32, j: i32) {
            check_pair(&Value::BigInt(a), &Value::BigInt(b), a.cmp(&b));
            check_pair(&Value::Timestamp(a), &Value::Timestamp(b), a.cmp(&b));
            check_pair(&Value::TinyInt(x), &Value::TinyInt(y), x.cmp(&y));
            check_pair(&Value::SmallInt(s), &Value::SmallInt(t), s.cmp(&t));
            check_pair(&Value::Int(i), &Value::Int(j), i.cmp(&j));
            let (da, db) = (a as u32, b as u32);
            check_pair(&Value::Date(da), &Value::Date(db), da.cmp(&db));
            check_pair(&Value::Boolean(x < 0), &Value::Boolean(y < 0), (x < 0).cmp(&(y < 0)));
        }

        #[test]
        fn prop_floats(a in float_strategy(), b in float_strategy(),
                       c in double_strategy(), d in double_strategy()) {
            check_pair(&Value::Float(a), &Value::Float(b), canon32(a).total_cmp(&canon32(b)));
            check_pair(&Value::Double(c), &Value::Double(d), canon64(c).total_cmp(&canon64(d)));
        }

        #[test]
        fn prop_bytes(a in bytes_strategy(), b in bytes_strategy(), s: String, t: String) {
            check_pair(&Value::Blob(a.clone()), &Value::Blob(b.clone()), a.cmp(&b));
            check_pair(&Value::Text(s.clone()), &Value::Text(t.clone()), s.as_bytes().cmp(t.as_bytes()));
            let (aa, ab): (String, String) = (a.iter().map(|&c| (c & 0x7F) as char).collect(),
                                              b.iter().map(|&c| (c & 0x7F) as char).collect());
            check_pair(&Value::Ascii(aa.clone()), &Value::Ascii(ab.clone()), aa.cmp(&ab));
        }

        #[test]
        fn prop_uuids(a in uuid_strategy(), b in uuid_strategy(), same_ts: bool) {
            let mut b = b;
            if same_ts {
                b[..8].copy_from_slice(&a[..8]);
            }
            check_pair(&Value::Uuid(a), &Value::Uuid(b), cassandra_uuid_cmp(&a, &b));
            let v1 = |mut u: [u8; 16]| { u[6] = (u[6] & 0x0F) | 0x10; u };
            let (ta, tb) = (v1(a), v1(b));
            check_pair(&Value::TimeUuid(ta), &Value::TimeUuid(tb), cassandra_timeuuid_cmp(&ta, &tb));
        }

        #[test]
        fn prop_varints(a in digits_strategy(), b in digits_strategy()) {
            let (va, vb) = (parse_value(&CqlType::Varint, &a).unwrap(), parse_value(&CqlType::Varint, &b).unwrap());
            check_pair(&va, &vb, digit_string_cmp(&a, &b));
        }

        #[test]
        fn prop_small_varints_match_i128(a: i64, b in any::<i128>()) {
            let va = Value::Varint(varint_of(i128::from(a)));
            let vb = Value::Varint(varint_of(b));
            prop_assert_eq!(format_value(&va), a.to_string());
            prop_assert_eq!(format_value(&vb), b.to_string());
            prop_assert_eq!(parse_value(&CqlType::Varint, &b.to_string()).unwrap(), vb.clone());
            check_pair(&va, &vb, i128::from(a).cmp(&b));
        }

        #[test]
        fn prop_decimals(ua in prop_oneof![any::<i64>(), -1000i64..1000], sa in -5i32..10,
                         ub in prop_oneof![any::<i64>(), -1000i64..1000], sb in -5i32..10,
                         rescale in 0u32..3) {
            // Sometimes make b numerically equal to a with a different scale.
            let (ub, sb) = if rescale == 0 && sa < 8 {
                (ua.checked_mul(100).unwrap_or(ua), if ua.checked_mul(100).is_some() { sa + 2 } else { sa })
            } else {
                (ub, sb)
            };
            let a = Value::Decimal { scale: sa, unscaled: varint_of(i128::from(ua)) };
            let b = Value::Decimal { scale: sb, unscaled: varint_of(i128::from(ub)) };
            let m = sa.max(sb);
            let na = i128::from(ua) * 10i128.pow((m - sa) as u32);
            let nb = i128::from(ub) * 10i128.pow((m - sb) as u32);
            // Numeric order only: the scale is no tie-breaker (DecimalType's compareTo).
            check_pair(&a, &b, na.cmp(&nb));
        }

        #[test]
        fn prop_value_equal_decimals_encode_equal(
            u in prop_oneof![any::<i64>(), -1000i64..1000, Just(0i64)],
            s in prop_oneof![-80i32..80, Just(i32::MIN), Just(1000), Just(i32::MIN + 3)],
            extra in 0u32..40,
            other in prop_oneof![any::<i64>(), -1000i64..1000],
            other_scale in -80i32..80,
            desc: bool,
        ) {
            // b is a spelled with `extra` more trailing zeros (1.5 -> 1.50...0).
            let a = Value::Decimal { scale: s, unscaled: varint_of(i128::from(u)) };
            let wide = format!("{}{}", u, "0".repeat(extra as usize));
            let b = match s.checked_add(extra as i32) {
                Some(sb) => Value::Decimal { scale: sb, unscaled: parse_varint(&wide).unwrap() },
                None => a.clone(),
            };
            prop_assert_eq!(enc(&a, desc), enc(&b, desc));
            prop_assert_eq!(canonical(&a), canonical(&b));
            round_trip(&a);
            round_trip(&b);
            // The canonical spelling is the one the rule names, written independently.
            prop_assert_eq!(format_value(&canonical(&a)), reference_canonical_text(u, s));
            // Order agrees with numeric order against an unrelated value.
            let c = Value::Decimal { scale: other_scale, unscaled: varint_of(i128::from(other)) };
            if (-80..80).contains(&s) {
                check_pair(&b, &c, decimal_cmp(u, s, other, other_scale));
            }
        }

        #[test]
        fn prop_inets(a in prop_oneof![any::<[u8; 4]>().prop_map(|x| x.to_vec()), any::<[u8; 16]>().prop_map(|x| x.to_vec())],
                      b in prop_oneof![any::<[u8; 4]>().prop_map(|x| x.to_vec()), any::<[u8; 16]>().prop_map(|x| x.to_vec())],
                      share_prefix: bool) {
            let mut b = b;
            if share_prefix {
                b[..4].copy_from_slice(&a[..4]);
            }
            check_pair(&Value::Inet(a.clone()), &Value::Inet(b.clone()), a.cmp(&b));
        }

        #[test]
        fn prop_multi_column(a: (i32, String, bool), b: (i32, String, bool), desc0: bool, desc1: bool, desc2: bool) {
            let row = |r: &(i32, String, bool)| vec![Value::Int(r.0), Value::Text(r.1.clone()), Value::Boolean(r.2)];
            let descs = [desc0, desc1, desc2];
            let key = |vals: &[Value]| {
                let pairs: Vec<(&Value, bool)> = vals.iter().zip(descs).collect();
                encode_clustering(&pairs)
            };
            let (ra, rb) = (row(&a), row(&b));
            let expected = [a.0.cmp(&b.0), a.1.as_bytes().cmp(b.1.as_bytes()), a.2.cmp(&b.2)]
                .iter()
                .zip(descs)
                .map(|(o, d)| if d { o.reverse() } else { *o })
                .fold(Ordering::Equal, Ordering::then);
            let (ka, kb) = (key(&ra), key(&rb));
            prop_assert_eq!(ka.cmp(&kb), expected);
            let types = [(CqlType::Int, desc0), (CqlType::Text, desc1), (CqlType::Boolean, desc2)];
            prop_assert_eq!(decode_clustering(&types, &ka).unwrap(), ra.clone());
            // A one- or two-column prefix bounds exactly the keys that extend it.
            for n in 1..3 {
                let prefix = key(&ra[..n]);
                prop_assert!(ka.starts_with(&prefix));
                prop_assert_eq!(decode_clustering(&types, &prefix).unwrap(), ra[..n].to_vec());
                if !kb.starts_with(&prefix) {
                    prop_assert_eq!(prefix.as_slice().cmp(&kb[..]), ka.cmp(&kb));
                }
            }
        }

        #[test]
        fn prop_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..40), desc: bool) {
            for ty in ALL_TYPES {
                let mut input = &bytes[..];
                let _ = decode_comparable(&ty, desc, &mut input);
                if let Ok(v) = deserialize(&ty, &bytes) {
                    prop_assert_eq!(serialize(&v).len() <= bytes.len(), true);
                }
            }
        }
    }

    #[test]
    fn type_names() {
        for ty in ALL_TYPES {
            assert_eq!(CqlType::parse(&ty.name()).unwrap(), ty);
            assert_eq!(CqlType::parse(&ty.name().to_uppercase()).unwrap(), ty);
        }
        assert_eq!(CqlType::parse("VarChar").unwrap(), CqlType::Text);
        assert!(CqlType::parse("list<int>").is_err());
        assert_eq!(CqlType::Uuid.fixed_size(), Some(16));
        assert_eq!(CqlType::Inet.fixed_size(), None);
        assert_eq!(CqlType::Date.fixed_size(), Some(4));
    }

    #[test]
    fn round_trips_every_type() {
        let samples = [
            ("boolean", "true"),
            ("boolean", "false"),
            ("tinyint", "-128"),
            ("smallint", "32767"),
            ("int", "-2147483648"),
            ("bigint", "9223372036854775807"),
            ("float", "1.5"),
            ("float", "-0"),
            ("float", "NaN"),
            ("float", "-Infinity"),
            ("double", "0.1"),
            ("double", "1e300"),
            ("text", ""),
            ("text", "héllo\0wörld"),
            ("ascii", "plain"),
            ("blob", "0x"),
            ("blob", "0x00ff10"),
            ("uuid", "550e8400-e29b-41d4-a716-446655440000"),
            ("timeuuid", "d2177dd0-eaa2-11de-a572-001b779c76e3"),
            ("timestamp", "2024-02-29T12:34:56.789Z"),
            ("timestamp", "1969-12-31T23:59:59.999Z"),
            ("timestamp", "-9223372036854775808"),
            ("date", "2024-02-29"),
            ("date", "0000-01-01"),
            ("date", "4294967295"),
            ("varint", "0"),
            ("varint", "-123456789012345678901234567890"),
            ("decimal", "-123.4500"),
            ("decimal", "0.000123"),
            ("decimal", "0.00"),
            ("decimal", "1.23E+7"),
            ("inet", "127.0.0.1"),
            ("inet", "2001:db8::1"),
        ];
        for (ty, text) in samples {
            let ty = CqlType::parse(ty).unwrap();
            let v = parse_value(&ty, text).unwrap();
            assert!(v.fits(&ty));
            round_trip(&v);
            if ty != CqlType::Float || text != "-0" {
                assert_eq!(format_value(&v), text, "{ty:?}");
            }
        }
    }

    #[test]
    fn serialization_matches_cassandra_bytes() {
        let cases: [(&str, &str, &[u8]); 14] = [
            ("boolean", "true", &[1]),
            ("int", "1", &[0, 0, 0, 1]),
            ("smallint", "-2", &[0xff, 0xfe]),
            ("bigint", "-1", &[0xff; 8]),
            ("float", "1", &[0x3f, 0x80, 0, 0]),
            ("double", "-2", &[0xc0, 0, 0, 0, 0, 0, 0, 0]),
            ("varint", "128", &[0x00, 0x80]),
            ("varint", "-128", &[0x80]),
            ("varint", "-129", &[0xff, 0x7f]),
            ("varint", "0", &[0x00]),
            ("decimal", "-123.4500", &[0, 0, 0, 4, 0xed, 0x29, 0xbc]),
            ("date", "1970-01-01", &[0x80, 0, 0, 0]),
            (
                "timestamp",
                "1970-01-01T00:00:01Z",
                &[0, 0, 0, 0, 0, 0, 0x03, 0xe8],
            ),
            ("inet", "10.0.0.1", &[10, 0, 0, 1]),
        ];
        for (ty, text, bytes) in cases {
            let v = parse_value(&CqlType::parse(ty).unwrap(), text).unwrap();
            assert_eq!(serialize(&v), bytes, "{ty} {text}");
        }
        for x in [
            0i128,
            1,
            -1,
            127,
            128,
            255,
            256,
            -256,
            -257,
            i128::MAX,
            i128::MIN,
        ] {
            let v = parse_value(&CqlType::Varint, &x.to_string()).unwrap();
            assert_eq!(serialize(&v), varint_of(x));
            assert_eq!(i128_of(&serialize(&v)), x);
        }
        // Non-minimal varints are normalised when read.
        assert_eq!(
            deserialize(&CqlType::Varint, &[0, 0, 5]).unwrap(),
            Value::Varint(vec![5])
        );
        assert_eq!(
            deserialize(&CqlType::Varint, &[0xff, 0xff]).unwrap(),
            Value::Varint(vec![0xff])
        );
    }

    #[test]
    fn calendar() {
        assert_eq!(
            parse_value(&CqlType::Timestamp, "2024-02-29T12:34:56.789Z").unwrap(),
            Value::Timestamp(1_709_210_096_789)
        );
        assert_eq!(
            parse_value(&CqlType::Timestamp, "2024-02-29 12:34:56.789").unwrap(),
            Value::Timestamp(1_709_210_096_789)
        );
        assert_eq!(
            parse_value(&CqlType::Timestamp, "2024-02-29T12:34:56.7").unwrap(),
            Value::Timestamp(1_709_210_096_700)
        );
        assert_eq!(
            parse_value(&CqlType::Timestamp, "1970-01-01").unwrap(),
            Value::Timestamp(0)
        );
        assert_eq!(
            parse_value(&CqlType::Timestamp, "1970-01-01T00:01").unwrap(),
            Value::Timestamp(60_000)
        );
        assert_eq!(
            parse_value(&CqlType::Date, "2024-02-29").unwrap(),
            Value::Date((1 << 31) + 19782)
        );
        assert_eq!(
            parse_value(&CqlType::Date, "0001-01-01").unwrap(),
            Value::Date((1u32 << 31) - 719_162)
        );
        for bad in ["2023-02-29", "2024-13-01", "2024-1-01", "2024-01-00", "x"] {
            assert!(parse_value(&CqlType::Date, bad).is_err(), "{bad}");
        }
        for bad in [
            "2024-01-01T24:00:00",
            "2024-01-01T12:00:00.1234",
            "2024-01-01T1:00",
            "2024-01-01T",
        ] {
            assert!(parse_value(&CqlType::Timestamp, bad).is_err(), "{bad}");
        }
        // Every day across several 400-year cycles survives the civil round trip.
        for z in (-800_000i64..800_000).step_by(7) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
            assert!(d >= 1 && d <= days_in_month(y, m));
        }
        // Out-of-range years fall back to raw numbers, which still round-trip.
        round_trip(&Value::Timestamp(i64::MIN));
        round_trip(&Value::Timestamp(i64::MAX));
        round_trip(&Value::Date(0));
        round_trip(&Value::Date(u32::MAX));
    }

    #[test]
    fn boundary_orders() {
        let asc = |vals: &[Value]| {
            for w in vals.windows(2) {
                check_pair(&w[0], &w[1], Ordering::Less);
            }
        };
        asc(&[
            Value::BigInt(i64::MIN),
            Value::BigInt(-1),
            Value::BigInt(0),
            Value::BigInt(i64::MAX),
        ]);
        asc(&[
            Value::Double(f64::NEG_INFINITY),
            Value::Double(f64::MIN),
            Value::Double(-0.0),
            Value::Double(0.0),
            Value::Double(f64::from_bits(1)),
            Value::Double(f64::INFINITY),
            Value::Double(f64::NAN),
        ]);
        asc(&[
            Value::Float(-1.0),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(f32::INFINITY),
            Value::Float(f32::NAN),
        ]);
        // Every NaN is the one canonical NaN, greatest of all, as in Java.
        assert_eq!(
            enc(&Value::Float(-f32::NAN), false),
            enc(&Value::Float(f32::NAN), false)
        );
        asc(&[
            Value::Text(String::new()),
            Value::Text("\0".into()),
            Value::Text("\0\0".into()),
            Value::Text("\0\u{1}".into()),
            Value::Text("\u{1}".into()),
            Value::Text("a".into()),
            Value::Text("a\0".into()),
            Value::Text("ab".into()),
            Value::Text("\u{7f}".into()),
            Value::Text("é".into()),
        ]);
        asc(&[
            Value::Blob(vec![]),
            Value::Blob(vec![0]),
            Value::Blob(vec![0, 0xff]),
            Value::Blob(vec![0, 0xff, 0]),
            Value::Blob(vec![0xfe]),
            Value::Blob(vec![0xff]),
            Value::Blob(vec![0xff, 0]),
            Value::Blob(vec![0xff, 0xff]),
        ]);
        let dec = |s: &str| parse_value(&CqlType::Decimal, s).unwrap();
        asc(&[
            dec("-1E+10"),
            dec("-100"),
            dec("-99.99"),
            dec("-1.0"),
            dec("-0.001"),
            dec("0"),
            dec("0.0001"),
            dec("1"),
            dec("1.01"),
            dec("1.1"),
            dec("10"),
            dec("123456789012345678901234567890.5"),
        ]);
        // Value-equal spellings are one key (DecimalType compares by value).
        for class in [
            &["-1.0", "-1.00", "-1", "-1E+0", "-0.1E+1"][..],
            &["0E+2", "0", "0.00", "-0.0", "0E-7"],
            &["1", "1.0", "1.000", "10E-1"],
            &["100", "1E+2", "100.0", "0.1E+3", "10E+1"],
            &["1.5", "1.50", "15E-1", "0.15E+1"],
        ] {
            for w in class.windows(2) {
                check_pair(&dec(w[0]), &dec(w[1]), Ordering::Equal);
            }
        }
        let var = |s: &str| parse_value(&CqlType::Varint, s).unwrap();
        let mut big = "9".repeat(400);
        asc(&[
            var(&format!("-{big}")),
            var("-129"),
            var("-128"),
            var("-1"),
            var("0"),
            var("1"),
            var("127"),
            var("128"),
            var(&big),
        ]);
        big.push('0');
        assert!(enc(&var(&big), false).len() > 160);
        let inet = |s: &str| parse_value(&CqlType::Inet, s).unwrap();
        // Cassandra's unsigned byte order: ::1 (0x00...) before 10.0.0.1.
        asc(&[
            inet("::1"),
            inet("10.0.0.1"),
            inet("a00:1::"),
            inet("255.255.255.254"),
            inet("255.255.255.255"),
            inet("ffff:ffff::"),
            inet("ffff:ffff::1"),
        ]);
    }

    #[test]
    fn decimal_keys_decode_to_one_canonical_spelling() {
        let dec = |s: &str| parse_value(&CqlType::Decimal, s).unwrap();
        let canon = |s: &str| format_value(&canonical(&dec(s)));
        for (written, read) in [
            ("1.50", "1.5"),
            ("0.00", "0"),
            ("-0.0", "0"),
            ("0E+5", "0"),
            ("1E+2", "100"),
            ("100.000", "100"),
            ("-7.0E+1", "-70"),
            ("0.0010", "0.001"),
            ("123.4500", "123.45"),
            ("1E+64", &format!("1{}", "0".repeat(64))),
            ("1E+65", "1E+65"),
            ("1.20E+100", "1.2E+100"),
            ("42", "42"),
        ] {
            assert_eq!(canon(written), read, "{written}");
            // The canonical value is a fixed point and is what a key decodes to.
            assert_eq!(
                canonical(&canonical(&dec(written))),
                canonical(&dec(written))
            );
            for desc in [false, true] {
                let e = enc(&dec(written), desc);
                let got = decode_comparable(&CqlType::Decimal, desc, &mut &e[..]).unwrap();
                assert_eq!(format_value(&got), read, "{written} desc={desc}");
            }
        }
        // A scale at the bottom of the i32 range cannot be stripped further: the
        // canonical value keeps the zeros it needs to stay representable.
        let edge = Value::Decimal {
            scale: i32::MIN,
            unscaled: vec![10],
        };
        assert_eq!(canonical(&edge), edge);
        round_trip(&edge);
        check_pair(
            &edge,
            &Value::Decimal {
                scale: i32::MIN + 1,
                unscaled: vec![100],
            },
            Ordering::Equal,
        );
    }

    #[test]
    fn decimal_encoding_dropped_only_the_scale_suffix() {
        // Format note for sstables written before value-equal decimals became one
        // key: the old encoding was today's followed by the scale as a big-endian
        // i32 with its sign bit flipped (4 bytes; inverted too in a DESC column).
        // Reading old bytes with today's decoder leaves those 4 bytes unconsumed.
        let v = parse_value(&CqlType::Decimal, "1.50").unwrap();
        let new = enc(&v, false);
        assert_eq!(
            new,
            [DEC_POS, 0x80, 0, 0, 0, 0, 0, 0, 1, 16, 0],
            "sign, E=1 flipped, digit pair '15', terminator"
        );
        let mut old = new.clone();
        old.extend_from_slice(&((2u32) ^ (1 << 31)).to_be_bytes());
        assert!(decode_clustering(&[(CqlType::Decimal, false)], &old).is_err());
        assert_eq!(
            enc(&parse_value(&CqlType::Decimal, "0.00").unwrap(), false),
            [DEC_ZERO]
        );
        assert_eq!(
            enc(&parse_value(&CqlType::Decimal, "0").unwrap(), true),
            [!DEC_ZERO]
        );
    }

    #[test]
    fn legacy_decimal_clusterings_convert_to_canonical() {
        let dec = |s: &str| parse_value(&CqlType::Decimal, s).unwrap();
        // The legacy encoding: today's, then the scale flipped big-endian (inverted
        // with the rest in a DESC column).
        let legacy = |v: &Value, desc: bool| {
            let mut e = enc(v, false);
            if let Value::Decimal { scale, .. } = v {
                e.extend_from_slice(&((*scale as u32) ^ (1 << 31)).to_be_bytes());
            }
            if desc {
                for b in &mut e {
                    *b = !*b;
                }
            }
            e
        };
        let types = [
            (CqlType::Decimal, true),
            (CqlType::Int, false),
            (CqlType::Decimal, false),
        ];
        for (a, b) in [("1.50", "0.00"), ("-7.0E+1", "1E+2"), ("0", "-0.001")] {
            let row = [dec(a), Value::Int(-3), dec(b)];
            let old: Vec<u8> = row
                .iter()
                .zip(types.iter())
                .flat_map(|(v, (_, d))| legacy(v, *d))
                .collect();
            let pairs: Vec<(&Value, bool)> = row.iter().zip(types.iter().map(|t| t.1)).collect();
            let converted = legacy_clustering_to_canonical(&types, &old).unwrap();
            assert_eq!(converted, encode_clustering(&pairs), "{a} {b}");
            assert_eq!(
                decode_clustering(&types, &converted).unwrap(),
                row.iter().map(canonical).collect::<Vec<_>>()
            );
            // A prefix (a range-tombstone bound) converts too.
            let prefix_len = legacy(&row[0], true).len() + 4;
            assert_eq!(
                legacy_clustering_to_canonical(&types, &old[..prefix_len]).unwrap(),
                encode_clustering(&pairs[..2])
            );
            // The suffix cut off, or garbage after it, is an error, not a guess.
            assert!(legacy_clustering_to_canonical(&types, &old[..old.len() - 1]).is_err());
            let mut long = old.clone();
            long.push(0);
            assert!(legacy_clustering_to_canonical(&types, &long).is_err());
        }
    }

    #[test]
    fn uuid_orders() {
        let u = |s: &str| parse_value(&CqlType::Uuid, s).unwrap();
        let t = |s: &str| parse_value(&CqlType::TimeUuid, s).unwrap();
        // time_low is least significant: a later time_hi wins despite a smaller time_low.
        let early = "ffffffff-0000-1000-8000-000000000000";
        let late = "00000000-0000-1001-8000-000000000000";
        check_pair(&t(early), &t(late), Ordering::Less);
        check_pair(&u(early), &u(late), Ordering::Less);
        // Version 1 sorts before version 4 regardless of bytes.
        check_pair(
            &u("ffffffff-ffff-1fff-ffff-ffffffffffff"),
            &u("00000000-0000-4000-0000-000000000000"),
            Ordering::Less,
        );
        // Timeuuid low bytes compare signed; uuid low bytes unsigned.
        let lo = "00000000-0000-1000-7f00-000000000000";
        let hi = "00000000-0000-1000-8000-000000000000";
        check_pair(&t(hi), &t(lo), Ordering::Less);
        check_pair(&u(lo), &u(hi), Ordering::Less);
    }

    #[test]
    fn parse_errors_name_the_problem() {
        let m = err_text(parse_value(&CqlType::TinyInt, "128"));
        assert!(
            m.contains("tinyint") && m.contains("128") && m.contains("range"),
            "{m}"
        );
        let m = err_text(parse_value(&CqlType::Int, "2147483648"));
        assert!(m.contains("int") && m.contains("out of range"), "{m}");
        let m = err_text(parse_value(&CqlType::BigInt, "9223372036854775808"));
        assert!(m.contains("bigint"), "{m}");
        assert!(err_text(parse_value(&CqlType::SmallInt, "12a")).contains("expected an integer"));
        for bad in [
            "550e8400-e29b-41d4-a716-44665544000",
            "550e8400e29b-41d4-a716-4466554400000",
            "550e8400-e29b-41d4-a716-44665544000g",
            "",
        ] {
            assert!(
                err_text(parse_value(&CqlType::Uuid, bad)).contains("uuid"),
                "{bad}"
            );
        }
        let m = err_text(parse_value(
            &CqlType::TimeUuid,
            "550e8400-e29b-41d4-a716-446655440000",
        ));
        assert!(m.contains("version 1"), "{m}");
        assert!(err_text(parse_value(&CqlType::Ascii, "héllo")).contains("non-ASCII"));
        for bad in ["0xabc", "abcd", "0xzz", "0x0g"] {
            assert!(
                err_text(parse_value(&CqlType::Blob, bad)).contains("blob"),
                "{bad}"
            );
        }
        for bad in ["", "-", "1.5", "1e3", " 1"] {
            assert!(parse_value(&CqlType::Varint, bad).is_err(), "{bad}");
        }
        for bad in [
            "",
            ".",
            "1..2",
            "1e",
            "1e+",
            "--1",
            "1.2.3",
            "1e99999999999",
        ] {
            assert!(parse_value(&CqlType::Decimal, bad).is_err(), "{bad}");
        }
        assert!(parse_value(&CqlType::Decimal, "1E-2147483649").is_err());
        assert!(parse_value(&CqlType::Boolean, "yes").is_err());
        assert!(parse_value(&CqlType::Float, "one").is_err());
        assert!(parse_value(&CqlType::Inet, "256.0.0.1").is_err());
        assert!(parse_value(&CqlType::Date, "4294967296").is_err());
        assert_eq!(
            parse_value(&CqlType::Boolean, "TRUE").unwrap(),
            Value::Boolean(true)
        );
    }

    #[test]
    fn deserialize_errors() {
        assert!(deserialize(&CqlType::Int, &[0, 0, 1]).is_err());
        assert!(deserialize(&CqlType::Int, &[]).is_err());
        assert!(deserialize(&CqlType::Text, &[0xc3, 0x28]).is_err());
        assert!(deserialize(&CqlType::Ascii, &[0x80]).is_err());
        let mut v4 = [0u8; 16];
        v4[6] = 0x40;
        assert!(deserialize(&CqlType::TimeUuid, &v4).is_err());
        assert!(deserialize(&CqlType::Uuid, &v4).is_ok());
        assert!(deserialize(&CqlType::Inet, &[1, 2, 3, 4, 5]).is_err());
        assert!(deserialize(&CqlType::Decimal, &[0, 0, 0, 1]).is_err());
        assert!(deserialize(&CqlType::Varint, &[]).is_err());
        assert_eq!(
            deserialize(&CqlType::Text, b"").unwrap(),
            Value::Text(String::new())
        );
        assert!(validate(&CqlType::Boolean, &[1, 0]).is_err());
    }

    #[test]
    fn decode_rejects_malformed() {
        let bad: [(CqlType, &[u8]); 9] = [
            (CqlType::Int, &[0x80, 0, 0]),
            (CqlType::Text, b"abc"),
            (CqlType::Text, &[b'a', 0, 7]),
            (CqlType::Text, &[0xc3, 0x28, 0, 0]),
            (CqlType::Boolean, &[2]),
            (CqlType::Inet, &[1, 2, 3, 4, 9]),
            (CqlType::Varint, &[0x82, 0x00, 0x05]),
            (CqlType::Decimal, &[9]),
            (
                CqlType::Decimal,
                &[
                    DEC_POS, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0x7f, 0xff, 0xff, 0xff,
                ],
            ),
        ];
        for (ty, bytes) in bad {
            let mut input = bytes;
            assert!(
                decode_comparable(&ty, false, &mut input).is_err(),
                "{ty:?} {bytes:02x?}"
            );
        }
        let key = encode_clustering(&[(&Value::Int(1), false)]);
        assert!(
            decode_clustering(&[(CqlType::Int, false)], &[key.clone(), vec![1]].concat()).is_err()
        );
        assert!(
            decode_clustering(&[(CqlType::Int, false), (CqlType::Text, true)], &key)
                .unwrap()
                .len()
                == 1
        );
        assert!(decode_clustering(&[(CqlType::Int, false)], &[])
            .unwrap()
            .is_empty());
    }
}
