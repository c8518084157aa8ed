//! Select-clause arithmetic on `varint` and `decimal` values, computed as
//! Cassandra 5.0 computes it with Java's `BigInteger` and `BigDecimal`.
//!
//! # Contract
//!
//! - **Result types** ([`result_type`]): a `decimal` operand, or a `varint`
//!   with a `float` or `double`, gives a `decimal`; a `varint` with any
//!   integer type gives a `varint`. Other pairs are not this module's.
//! - **varint** operations are exact; `/` truncates toward zero and `%` takes
//!   the dividend's sign (Java's `BigInteger`); a zero divisor fails with
//!   Java's message, "BigInteger divide by zero".
//! - **decimal** operands are converted as Cassandra's `DecimalType` converts
//!   them: a decimal as it is, a varint exactly (scale 0), any other number
//!   through its `double` value and `Double.toString` (so `2` becomes `2.0`,
//!   scale 1, and `de * 2` of `1.25` is `2.500`); NaN and infinities are
//!   refused with Java's messages.
//! - `+`, `-`, `*` are exact (Java's `MathContext(10000)`: rounded half up
//!   past 10,000 digits); `/` is rounded half up to
//!   `max(32 - (integer digits of l - integer digits of r), l.scale, r.scale,
//!   32)` places (at most 1,000), then stripped of trailing zeros (`1E+1`);
//!   `%` is `l - trunc(l / r) * r` with Java's scale. A zero divisor fails:
//!   "BigInteger divide by zero" for `/`, "Division by zero" for `%`.
//!
//! # Known difference
//!
//! Java 17's `Double.toString` is not always the shortest text that reads
//! back as the same double (JDK-4511638, fixed in Java 19); this module uses
//! the shortest. A `bigint` beyond 2^53 (or a rare `double`) combined with a
//! `decimal` can therefore differ in its last digits from Cassandra 5.0
//! running on Java 17 (`1234567890123456789` converts to
//! `1.23456789012345677E18` there, `1.2345678901234568E18` here).

use crate::cql::ast::ArithOp;
use crate::types::{CqlType, Value};
use num_bigint::BigInt;
use num_traits::{Signed, Zero};

/// Java's `MathContext(10000)` of `DecimalType`'s `+`, `-`, `*`.
const MAX_PRECISION: u64 = 10_000;
/// The places a quotient gets at least, and at most.
const MIN_DIVISION_SCALE: i64 = 32;
const MAX_DIVISION_SCALE: i64 = 1_000;

/// The result type of `l op r` when this module computes it.
pub(crate) fn result_type(l: &CqlType, r: &CqlType) -> Option<CqlType> {
    use CqlType::*;
    let integer = |t: &CqlType| matches!(t, TinyInt | SmallInt | Int | BigInt | Varint);
    let number = |t: &CqlType| integer(t) || matches!(t, Float | Double | Decimal);
    if !number(l) || !number(r) {
        return None;
    }
    if *l == Decimal || *r == Decimal {
        return Some(Decimal);
    }
    match (l, r) {
        (Varint, o) | (o, Varint) if integer(o) => Some(Varint),
        (Varint, _) | (_, Varint) => Some(Decimal),
        _ => None,
    }
}

/// `l op r` of the type [`result_type`] gave; `Err` is the failure's text
/// (the caller names the operation).
pub(crate) fn apply(op: ArithOp, l: &Value, r: &Value, out: &CqlType) -> Result<Value, String> {
    match out {
        CqlType::Varint => {
            let (a, b) = (integer(l)?, integer(r)?);
            if b.is_zero() && matches!(op, ArithOp::Div | ArithOp::Rem) {
                return Err("BigInteger divide by zero".to_string());
            }
            let x = match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Rem => a % b,
            };
            Ok(Value::Varint(x.to_signed_bytes_be()))
        }
        _ => {
            let (a, b) = (Decimal::of(l)?, Decimal::of(r)?);
            let x = match op {
                ArithOp::Add => a.add(&b).rounded(MAX_PRECISION),
                ArithOp::Sub => a.add(&b.negated()).rounded(MAX_PRECISION),
                ArithOp::Mul => a.mul(&b).rounded(MAX_PRECISION),
                ArithOp::Div => a.div(&b)?,
                ArithOp::Rem => a.rem(&b)?,
            };
            Ok(x.into_value())
        }
    }
}

/// A varint operand: a varint, or an integer of another type, exactly.
fn integer(v: &Value) -> Result<BigInt, String> {
    Ok(match v {
        Value::Varint(b) => BigInt::from_signed_bytes_be(b),
        Value::TinyInt(x) => BigInt::from(*x),
        Value::SmallInt(x) => BigInt::from(*x),
        Value::Int(x) => BigInt::from(*x),
        Value::BigInt(x) | Value::Counter(x) => BigInt::from(*x),
        other => return Err(format!("{} is not an integer", other.kind_name())),
    })
}

fn pow10(n: u64) -> BigInt {
    num_traits::pow(BigInt::from(10u8), n as usize)
}

/// `unscaled * 10^-scale`, as Java's `BigDecimal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decimal {
    unscaled: BigInt,
    scale: i64,
}

impl Decimal {
    /// A decimal operand as `DecimalType.toBigDecimal` converts it.
    fn of(v: &Value) -> Result<Decimal, String> {
        let double = match v {
            Value::Decimal { scale, unscaled } => {
                return Ok(Decimal {
                    unscaled: BigInt::from_signed_bytes_be(unscaled),
                    scale: i64::from(*scale),
                })
            }
            Value::Varint(b) => {
                return Ok(Decimal {
                    unscaled: BigInt::from_signed_bytes_be(b),
                    scale: 0,
                })
            }
            Value::TinyInt(x) => f64::from(*x),
            Value::SmallInt(x) => f64::from(*x),
            Value::Int(x) => f64::from(*x),
            Value::BigInt(x) | Value::Counter(x) => *x as f64,
            Value::Float(x) => f64::from(*x),
            Value::Double(x) => *x,
            other => return Err(format!("{} is not a number", other.kind_name())),
        };
        Decimal::of_double(double)
    }

    /// `BigDecimal.valueOf(d)`: the decimal `Double.toString(d)` prints, which
    /// has at least one digit after the point in its plain form (`2.0`,
    /// `1000.0`, for 10^-3 <= |d| < 10^7) and in its scientific one
    /// (`7.0E10`).
    pub(crate) fn of_double(d: f64) -> Result<Decimal, String> {
        if d.is_nan() {
            return Err("A NaN cannot be converted into a decimal".to_string());
        }
        if d.is_infinite() {
            return Err("An infinite number cannot be converted into a decimal".to_string());
        }
        if d == 0.0 {
            return Ok(Decimal {
                unscaled: BigInt::zero(),
                scale: 1,
            });
        }
        // Shortest digits and the exponent of the first: `d1.d2d3e<exp>`.
        let sci = format!("{:e}", d.abs());
        let (mantissa, exp) = sci.split_once('e').ok_or("no exponent")?;
        let exp: i64 = exp.parse().map_err(|_| "bad exponent")?;
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let n = digits.len() as i64;
        let plain = (1e-3..1e7).contains(&d.abs());
        // Places after the point as printed: in the plain form those the
        // digits need past the units, at least one; in the scientific form
        // the mantissa's, at least one, less the exponent.
        let (unscaled_digits, scale) = if plain {
            let places = (n - 1 - exp).max(1);
            let pad = places - (n - 1 - exp);
            (format!("{digits}{}", "0".repeat(pad as usize)), places)
        } else if n == 1 {
            (format!("{digits}0"), 1 - exp)
        } else {
            (digits, n - 1 - exp)
        };
        let mut unscaled: BigInt = unscaled_digits.parse().map_err(|_| "bad digits")?;
        if d < 0.0 {
            unscaled = -unscaled;
        }
        Ok(Decimal { unscaled, scale })
    }

    fn into_value(self) -> Value {
        Value::Decimal {
            // Scales past i32 cannot come out of the operations above (a
            // quotient's is at most 1,000 past its operands').
            scale: self.scale.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
            unscaled: self.unscaled.to_signed_bytes_be(),
        }
    }

    /// Decimal digits of the unscaled value; 1 for zero.
    fn precision(&self) -> i64 {
        if self.unscaled.is_zero() {
            return 1;
        }
        self.unscaled.abs().to_string().len() as i64
    }

    fn negated(&self) -> Decimal {
        Decimal {
            unscaled: -&self.unscaled,
            scale: self.scale,
        }
    }

    /// The same value at `scale` (at least the current one).
    fn widened(&self, scale: i64) -> BigInt {
        &self.unscaled * pow10((scale - self.scale) as u64)
    }

    fn add(&self, o: &Decimal) -> Decimal {
        let scale = self.scale.max(o.scale);
        Decimal {
            unscaled: self.widened(scale) + o.widened(scale),
            scale,
        }
    }

    fn mul(&self, o: &Decimal) -> Decimal {
        Decimal {
            unscaled: &self.unscaled * &o.unscaled,
            scale: self.scale + o.scale,
        }
    }

    /// Rounded half up to `digits` significant digits, if it has more.
    fn rounded(self, digits: u64) -> Decimal {
        let extra = self.precision() - digits as i64;
        if extra <= 0 {
            return self;
        }
        Decimal {
            unscaled: div_half_up(&self.unscaled, &pow10(extra as u64)),
            scale: self.scale - extra,
        }
    }

    /// `l / r` as `DecimalType.divide`: rounded half up at the scale the
    /// module docs give, then stripped of trailing zeros.
    fn div(&self, o: &Decimal) -> Result<Decimal, String> {
        if o.unscaled.is_zero() {
            return Err("BigInteger divide by zero".to_string());
        }
        let integer_digits = |d: &Decimal| d.precision() - d.scale;
        let scale = (MIN_DIVISION_SCALE - (integer_digits(self) - integer_digits(o)))
            .max(self.scale)
            .max(o.scale)
            .clamp(MIN_DIVISION_SCALE, MAX_DIVISION_SCALE);
        // q = l / r * 10^scale = (lu * 10^-ls) / (ru * 10^-rs) * 10^scale.
        let shift = scale - self.scale + o.scale;
        let (num, den) = if shift >= 0 {
            (&self.unscaled * pow10(shift as u64), o.unscaled.clone())
        } else {
            (self.unscaled.clone(), &o.unscaled * pow10((-shift) as u64))
        };
        Ok(Decimal {
            unscaled: div_half_up(&num, &den),
            scale,
        }
        .stripped())
    }

    /// `l % r` as `BigDecimal.remainder`: the integral quotient carries the
    /// preferred scale `l.scale - r.scale` (no lower than its own trailing
    /// zeros allow), so the result's scale is its plus `r.scale`.
    fn rem(&self, o: &Decimal) -> Result<Decimal, String> {
        if o.unscaled.is_zero() {
            return Err("Division by zero".to_string());
        }
        let scale = self.scale.max(o.scale);
        // Truncated toward zero, as BigInt division is.
        let q = self.widened(scale) / o.widened(scale);
        let preferred = self.scale - o.scale;
        let q_scale = if preferred >= 0 || q.is_zero() {
            preferred
        } else {
            preferred.max(-trailing_zeros(&q))
        };
        let q = Decimal {
            unscaled: if q_scale >= 0 {
                q * pow10(q_scale as u64)
            } else {
                q / pow10((-q_scale) as u64)
            },
            scale: q_scale,
        };
        Ok(self.add(&q.mul(o).negated()))
    }

    /// Trailing zeros removed (`BigDecimal.stripTrailingZeros`); zero is 0.
    fn stripped(self) -> Decimal {
        if self.unscaled.is_zero() {
            return Decimal {
                unscaled: BigInt::zero(),
                scale: 0,
            };
        }
        let tz = trailing_zeros(&self.unscaled);
        Decimal {
            unscaled: self.unscaled / pow10(tz as u64),
            scale: self.scale - tz,
        }
    }
}

/// Decimal trailing zeros of a non-zero integer.
fn trailing_zeros(x: &BigInt) -> i64 {
    let text = x.abs().to_string();
    (text.len() - text.trim_end_matches('0').len()) as i64
}

/// `num / den` rounded half up (away from zero at exactly half).
fn div_half_up(num: &BigInt, den: &BigInt) -> BigInt {
    let q = num / den;
    let r = num % den;
    if (r.abs() * 2u8) >= den.abs() {
        let away = if num.is_negative() != den.is_negative() {
            -1
        } else {
            1
        };
        q + away
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Value {
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        let unscaled: BigInt = format!("{int}{frac}").parse().unwrap();
        Value::Decimal {
            scale: frac.len() as i32,
            unscaled: unscaled.to_signed_bytes_be(),
        }
    }

    fn varint(text: &str) -> Value {
        Value::Varint(text.parse::<BigInt>().unwrap().to_signed_bytes_be())
    }

    fn show(v: Value) -> String {
        match v {
            v @ Value::Decimal { .. } => crate::types::format_value(&v),
            Value::Varint(b) => BigInt::from_signed_bytes_be(&b).to_string(),
            other => format!("{other:?}"),
        }
    }

    /// The type of a test operand.
    fn type_of(v: &Value) -> CqlType {
        match v {
            Value::TinyInt(_) => CqlType::TinyInt,
            Value::Int(_) => CqlType::Int,
            Value::BigInt(_) => CqlType::BigInt,
            Value::Float(_) => CqlType::Float,
            Value::Double(_) => CqlType::Double,
            Value::Varint(_) => CqlType::Varint,
            Value::Decimal { .. } => CqlType::Decimal,
            other => panic!("not a test operand: {other:?}"),
        }
    }

    fn run(op: ArithOp, l: Value, r: Value) -> String {
        let out = result_type(&type_of(&l), &type_of(&r)).unwrap();
        match apply(op, &l, &r, &out) {
            Ok(v) => show(v),
            Err(e) => format!("error: {e}"),
        }
    }

    /// Every figure here is what Cassandra 5.0.9 answered to the same
    /// select (`de` 1.25, then 1.5 and -2.5; `vi` 12345678901234567890,
    /// then 10 and -7; `f` 1.5 then 0.1f; `d` 2.5; `i` 7).
    #[test]
    fn results_are_cassandras() {
        use ArithOp::*;
        let de = || dec("1.25");
        let vi = || varint("12345678901234567890");
        let cases = [
            (run(Mul, de(), Value::Int(2)), "2.500"),
            (run(Div, de(), Value::Int(4)), "0.3125"),
            (
                run(Div, de(), Value::Int(3)),
                "0.41666666666666666666666666666667",
            ),
            (run(Add, de(), Value::Int(5)), "6.25"),
            (run(Add, Value::Double(2.5), de()), "3.75"),
            (run(Add, Value::Float(1.5), de()), "2.75"),
            (run(Add, Value::BigInt(-9), de()), "-7.75"),
            (run(Sub, de(), Value::Int(1)), "0.25"),
            (run(Rem, de(), Value::Int(1)), "0.25"),
            (run(Mul, de(), de()), "1.5625"),
            (run(Div, de(), de()), "1"),
            (run(Rem, de(), de()), "0.00"),
            (
                run(Div, de(), Value::Int(7)),
                "0.17857142857142857142857142857143",
            ),
            (run(Div, de(), Value::Int(8)), "0.15625"),
            (run(Mul, de(), Value::Double(0.1)), "0.125"),
            (run(Add, de(), Value::Double(0.001)), "1.251"),
            (run(Sub, de(), Value::Double(5.125)), "-3.875"),
            (
                run(Div, de(), Value::Float(1.5)),
                "0.83333333333333333333333333333333",
            ),
            (run(Div, Value::Double(2.5), de()), "2"),
            (run(Div, Value::Float(1.5), de()), "1.2"),
            (run(Div, Value::Int(7), de()), "5.6"),
            (run(Rem, de(), Value::Double(0.3)), "0.05"),
            (run(Rem, dec("-1.25"), Value::Double(0.3)), "-0.05"),
            (run(Rem, de(), Value::Double(-0.3)), "0.05"),
            (run(Add, de(), Value::Double(1e3)), "1001.25"),
            (run(Mul, de(), Value::Double(1e-3)), "0.00125"),
            (run(Add, vi(), Value::Int(1)), "12345678901234567891"),
            (run(Sub, vi(), vi()), "0"),
            (run(Mul, vi(), Value::Double(2.5)), "30864197253086419725.0"),
            (run(Div, vi(), Value::Double(2.0)), "6172839450617283945"),
            (run(Add, vi(), Value::Double(1.5)), "12345678901234567891.5"),
            (run(Add, vi(), de()), "12345678901234567891.25"),
            (run(Add, vi(), Value::TinyInt(-128)), "12345678901234567762"),
            (run(Div, vi(), Value::Int(7)), "1763668414462081127"),
            (run(Div, vi(), Value::Int(-7)), "-1763668414462081127"),
            (run(Rem, vi(), Value::Int(7)), "1"),
            (
                run(Rem, varint("-12345678901234567890"), Value::Int(7)),
                "-1",
            ),
            (run(Rem, vi(), Value::Int(-7)), "1"),
            (
                run(Mul, run_value(Mul, vi(), vi()), vi()),
                "1881676372353657772490265749424677022198701224860897069000",
            ),
            (run(Div, Value::Int(7), vi()), "0"),
            (run(Mul, dec("1.5"), Value::Int(2)), "3.00"),
            (
                run(Mul, dec("1.5"), Value::Float(0.1)),
                "0.150000002235174180",
            ),
            (
                run(Mul, varint("10"), Value::Float(0.1)),
                "1.00000001490116120",
            ),
            (
                run(Div, Value::Int(1), dec("1.5")),
                "0.66666666666666666666666666666667",
            ),
            (
                run(Div, Value::Int(2), dec("1.5")),
                "1.33333333333333333333333333333333",
            ),
            (
                run(Div, varint("10"), dec("1.5")),
                "6.66666666666666666666666666666667",
            ),
            (run(Div, dec("1.5"), varint("10")), "0.15"),
            (run(Mul, varint("10"), dec("1.5")), "15.0"),
            (run(Sub, varint("10"), dec("1.5")), "8.5"),
            (run(Div, varint("10"), Value::Double(1.0)), "1E+1"),
            (run(Div, varint("10"), Value::Double(0.5)), "2E+1"),
            (run(Div, dec("1.5"), Value::Double(0.015)), "1E+2"),
            (run(Div, dec("1.5"), Value::Double(1e-40)), "1.5E+40"),
            (
                run(Div, dec("1.5"), Value::Double(7e10)),
                "2.1428571428571428571428571428571E-11",
            ),
            (run(Div, dec("1.5"), Value::Double(3e40)), "5E-41"),
            (run(Mul, dec("1.5"), Value::Double(1e300)), "1.50E+300"),
            (
                run(Div, dec("-2.5"), Value::Int(7)),
                "-0.35714285714285714285714285714286",
            ),
            (run(Rem, dec("-2.5"), Value::Int(3)), "-2.5"),
            (
                run(Div, dec("-2.5"), Value::Double(0.6)),
                "-4.16666666666666666666666666666667",
            ),
            (run(Div, varint("-7"), Value::Int(2)), "-3"),
            (
                run(Div, de(), Value::Int(0)),
                "error: BigInteger divide by zero",
            ),
            (
                run(Div, de(), Value::Double(0.0)),
                "error: BigInteger divide by zero",
            ),
            (run(Rem, de(), Value::Int(0)), "error: Division by zero"),
            (
                run(Rem, vi(), Value::Int(0)),
                "error: BigInteger divide by zero",
            ),
            (
                run(Add, de(), Value::Double(f64::NAN)),
                "error: A NaN cannot be converted into a decimal",
            ),
        ];
        for (i, (got, want)) in cases.iter().enumerate() {
            assert_eq!(got, want, "case {i}");
        }
    }

    fn run_value(op: ArithOp, l: Value, r: Value) -> Value {
        let out = result_type(&type_of(&l), &type_of(&r)).unwrap();
        apply(op, &l, &r, &out).unwrap()
    }

    #[test]
    fn doubles_convert_as_java_prints_them() {
        for (d, want) in [
            (2.0, "2.0"),
            (1000.0, "1000.0"),
            (0.001, "0.001"),
            (1234.5, "1234.5"),
            (1e7, "1.0E+7"),
            (7e10, "7.0E+10"),
            (1e-4, "0.00010"),
            (-2.5, "-2.5"),
            (0.0, "0.0"),
            (f64::from(0.1f32), "0.10000000149011612"),
        ] {
            let v = Decimal::of_double(d).unwrap().into_value();
            assert_eq!(crate::types::format_value(&v), want, "{d}");
        }
    }

    #[test]
    fn result_types_are_cassandras() {
        use CqlType::*;
        assert_eq!(result_type(&Varint, &Int), Some(Varint));
        assert_eq!(result_type(&TinyInt, &Varint), Some(Varint));
        assert_eq!(result_type(&Varint, &Float), Some(Decimal));
        assert_eq!(result_type(&Double, &Decimal), Some(Decimal));
        assert_eq!(result_type(&Decimal, &Int), Some(Decimal));
        assert_eq!(result_type(&Int, &Int), None);
        assert_eq!(result_type(&Decimal, &Text), None);
    }
}
