//! `time` and `duration`: their text forms and Cassandra's byte formats.
//!
//! Contract:
//! 1. A time is nanoseconds since midnight in `0..NANOS_PER_DAY`, serialized as
//!    8 bytes big-endian (Cassandra's `TimeSerializer`), printed as
//!    `hh:mm:ss.fffffffff` (always nine fraction digits, as Cassandra prints it).
//! 2. A duration is (months, days, nanoseconds), all of one sign or zero,
//!    serialized as three of Cassandra's signed vints (zigzag, then the
//!    length-in-first-byte unsigned vint of `VIntCoding`), printed as
//!    Cassandra's `Duration.toString` does (`1y2mo3d4h5m6s7ms8us9ns`, a leading
//!    `-` when negative, the empty string for zero).
//! 3. [`parse_duration`] reads the three forms Cassandra's `Duration.from`
//!    reads: units (`1h30m`, `-2d`), ISO 8601 (`P1Y2M3DT4H5M6S`, `P2W`) and the
//!    ISO alternative (`P0001-02-03T04:05:06`); [`parse_time`] reads
//!    `hh:mm:ss[.f...]` or a count of nanoseconds. Neither panics on any input.

use crate::error::{Error, Result};

pub const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;
const NANOS_PER_HOUR: i64 = 3_600 * 1_000_000_000;
const NANOS_PER_MINUTE: i64 = 60 * 1_000_000_000;
const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_MICRO: i64 = 1_000;

fn invalid_time(text: &str, why: &str) -> Error {
    Error::InvalidInput(format!("invalid time value '{text}': {why}"))
}

fn invalid_duration(text: &str, why: &str) -> Error {
    Error::InvalidInput(format!("invalid duration value '{text}': {why}"))
}

/// `hh:mm:ss.fffffffff`.
pub fn format_time(nanos: i64) -> String {
    let n = nanos.rem_euclid(NANOS_PER_DAY);
    let (secs, frac) = (n / NANOS_PER_SECOND, n % NANOS_PER_SECOND);
    format!(
        "{:02}:{:02}:{:02}.{frac:09}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// `hh:mm:ss[.f{1,9}]` or a count of nanoseconds (`-?\d+`), as Cassandra's
/// `TimeSerializer.timeStringToLong`.
pub fn parse_time(text: &str) -> Result<i64> {
    let t = text.trim();
    let digits = t.strip_prefix('-').unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n: i64 = t.parse().map_err(|_| invalid_time(text, "out of range"))?;
        if !(0..NANOS_PER_DAY).contains(&n) {
            return Err(invalid_time(
                text,
                "nanoseconds must be in [0, 86399999999999]",
            ));
        }
        return Ok(n);
    }
    let (hms, frac) = match t.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (t, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let [h, m, s] = parts[..] else {
        return Err(invalid_time(text, "expected hh:mm:ss[.fffffffff]"));
    };
    let field = |p: &str, max: i64, what: &str| -> Result<i64> {
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid_time(text, &format!("bad {what}")));
        }
        let v: i64 = p.parse().map_err(|_| invalid_time(text, "bad number"))?;
        if v > max {
            return Err(invalid_time(text, &format!("{what} out of range")));
        }
        Ok(v)
    };
    let mut n = field(h, 23, "hour")? * NANOS_PER_HOUR
        + field(m, 59, "minute")? * NANOS_PER_MINUTE
        + field(s, 59, "second")? * NANOS_PER_SECOND;
    if let Some(f) = frac {
        if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid_time(text, "the fraction must be 1 to 9 digits"));
        }
        let v: i64 = f.parse().map_err(|_| invalid_time(text, "bad fraction"))?;
        n += v * 10i64.pow(9 - f.len() as u32);
    }
    Ok(n)
}

/// Cassandra's `Duration.toString`.
pub fn format_duration(months: i32, days: i32, nanos: i64) -> String {
    fn part(out: &mut String, dividend: u64, divisor: u64, unit: &str) -> u64 {
        if dividend == 0 || dividend < divisor {
            return dividend;
        }
        out.push_str(&(dividend / divisor).to_string());
        out.push_str(unit);
        dividend % divisor
    }
    let mut s = String::new();
    if months < 0 || days < 0 || nanos < 0 {
        s.push('-');
    }
    let rest = part(&mut s, u64::from(months.unsigned_abs()), 12, "y");
    part(&mut s, rest, 1, "mo");
    part(&mut s, u64::from(days.unsigned_abs()), 1, "d");
    if nanos != 0 {
        let mut rest = nanos.unsigned_abs();
        for (div, unit) in [
            (NANOS_PER_HOUR, "h"),
            (NANOS_PER_MINUTE, "m"),
            (NANOS_PER_SECOND, "s"),
            (NANOS_PER_MILLI, "ms"),
            (NANOS_PER_MICRO, "us"),
            (1, "ns"),
        ] {
            rest = part(&mut s, rest, div as u64, unit);
        }
    }
    s
}

/// Accumulates a duration's parts with overflow checks.
#[derive(Default)]
struct Parts {
    months: i64,
    days: i64,
    nanos: i64,
}

impl Parts {
    fn add(&mut self, text: &str, n: i64, unit: &str) -> Result<()> {
        let overflow = || invalid_duration(text, "out of range");
        let (slot, mul) = match unit {
            "y" => (&mut self.months, 12),
            "mo" => (&mut self.months, 1),
            "w" => (&mut self.days, 7),
            "d" => (&mut self.days, 1),
            "h" => (&mut self.nanos, NANOS_PER_HOUR),
            "m" => (&mut self.nanos, NANOS_PER_MINUTE),
            "s" => (&mut self.nanos, NANOS_PER_SECOND),
            "ms" => (&mut self.nanos, NANOS_PER_MILLI),
            "us" | "µs" => (&mut self.nanos, NANOS_PER_MICRO),
            "ns" => (&mut self.nanos, 1),
            _ => return Err(invalid_duration(text, &format!("unknown unit '{unit}'"))),
        };
        *slot = n
            .checked_mul(mul)
            .and_then(|v| slot.checked_add(v))
            .ok_or_else(overflow)?;
        Ok(())
    }

    fn finish(self, text: &str, negative: bool) -> Result<(i32, i32, i64)> {
        let sign = if negative { -1 } else { 1 };
        let months = i32::try_from(self.months * sign)
            .map_err(|_| invalid_duration(text, "months out of range"))?;
        let days = i32::try_from(self.days * sign)
            .map_err(|_| invalid_duration(text, "days out of range"))?;
        Ok((months, days, self.nanos * sign))
    }
}

fn number(text: &str, digits: &str) -> Result<i64> {
    digits
        .parse::<i64>()
        .map_err(|_| invalid_duration(text, "number out of range"))
}

/// Parses a duration literal in any of the forms Cassandra reads.
pub fn parse_duration(text: &str) -> Result<(i32, i32, i64)> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if body.is_empty() {
        return Err(invalid_duration(text, "empty"));
    }
    let mut parts = Parts::default();
    if let Some(iso) = body.strip_prefix('P') {
        if iso.contains('-') {
            parse_iso_alternative(text, iso, &mut parts)?;
        } else {
            parse_iso(text, iso, &mut parts)?;
        }
        return parts.finish(text, negative);
    }
    let lower = body.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while !rest.is_empty() {
        let d = rest.bytes().take_while(u8::is_ascii_digit).count();
        if d == 0 {
            return Err(invalid_duration(text, "expected a number"));
        }
        let n = number(text, &rest[..d])?;
        rest = &rest[d..];
        let u = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        if u == 0 {
            return Err(invalid_duration(text, "a number without a unit"));
        }
        parts.add(text, n, &rest[..u])?;
        rest = &rest[u..];
    }
    parts.finish(text, negative)
}

/// `nY nM nD T nH nM nS` or `nW`, after the `P`.
fn parse_iso(text: &str, iso: &str, parts: &mut Parts) -> Result<()> {
    if iso.is_empty() {
        return Err(invalid_duration(text, "nothing after P"));
    }
    if let Some(w) = iso.strip_suffix('W') {
        if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid_duration(text, "bad week count"));
        }
        return parts.add(text, number(text, w)?, "w");
    }
    let (date, time) = match iso.split_once('T') {
        Some((_, "")) => return Err(invalid_duration(text, "nothing after T")),
        Some((d, t)) => (d, Some(t)),
        None => (iso, None),
    };
    let mut read = |section: &str, units: &[(char, &str)]| -> Result<()> {
        let mut rest = section;
        let mut next = 0;
        while !rest.is_empty() {
            let d = rest.bytes().take_while(u8::is_ascii_digit).count();
            let unit = rest[d..].chars().next();
            let (Some(unit), true) = (unit, d > 0) else {
                return Err(invalid_duration(text, "bad ISO 8601 duration"));
            };
            let Some(pos) = units[next..].iter().position(|(c, _)| *c == unit) else {
                return Err(invalid_duration(text, "bad ISO 8601 duration"));
            };
            parts.add(text, number(text, &rest[..d])?, units[next + pos].1)?;
            next += pos + 1;
            rest = &rest[d + 1..];
        }
        Ok(())
    };
    read(date, &[('Y', "y"), ('M', "mo"), ('D', "d")])?;
    if let Some(t) = time {
        read(t, &[('H', "h"), ('M', "m"), ('S', "s")])?;
    }
    Ok(())
}

/// `YYYY-MM-DDThh:mm:ss`, after the `P`.
fn parse_iso_alternative(text: &str, iso: &str, parts: &mut Parts) -> Result<()> {
    let bad = || invalid_duration(text, "expected PYYYY-MM-DDThh:mm:ss");
    let (date, time) = iso.split_once('T').ok_or_else(bad)?;
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    let ([y, mo, dd], [h, mi, s]) = (&d[..], &t[..]) else {
        return Err(bad());
    };
    for (v, len, unit) in [
        (y, 4, "y"),
        (mo, 2, "mo"),
        (dd, 2, "d"),
        (h, 2, "h"),
        (mi, 2, "m"),
        (s, 2, "s"),
    ] {
        if v.len() != len || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        parts.add(text, number(text, v)?, unit)?;
    }
    Ok(())
}

/// Whether the parts are a valid duration: never of opposite signs.
pub fn valid_duration(months: i32, days: i32, nanos: i64) -> bool {
    let neg = months < 0 || days < 0 || nanos < 0;
    let pos = months > 0 || days > 0 || nanos > 0;
    !(neg && pos)
}

/// Cassandra's unsigned vint (`VIntCoding.writeUnsignedVInt`): the count of
/// extra bytes as leading one bits of the first byte, then big-endian.
pub fn write_unsigned_vint(v: u64, out: &mut Vec<u8>) {
    let magnitude = (v | 1).leading_zeros() as usize;
    let size = (639 - magnitude * 9) >> 6;
    if size == 1 {
        out.push(v as u8);
        return;
    }
    let extra = size - 1;
    let mut buf = [0u8; 9];
    for (i, b) in buf[..size].iter_mut().rev().enumerate() {
        if i < 8 {
            *b = (v >> (8 * i)) as u8;
        }
    }
    buf[0] |= !(0xFFu16 >> extra) as u8;
    out.extend_from_slice(&buf[..size]);
}

/// Reads one unsigned vint from the front of `input`.
pub fn read_unsigned_vint(input: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = input.split_first()?;
    let extra = first.leading_ones() as usize;
    if rest.len() < extra {
        return None;
    }
    let mut v = u64::from(first & (0xFFu16 >> extra) as u8);
    for &b in &rest[..extra] {
        v = (v << 8) | u64::from(b);
    }
    *input = &rest[extra..];
    Some(v)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A duration's serialized bytes.
pub fn serialize_duration(months: i32, days: i32, nanos: i64, out: &mut Vec<u8>) {
    write_unsigned_vint(zigzag(i64::from(months)), out);
    write_unsigned_vint(zigzag(i64::from(days)), out);
    write_unsigned_vint(zigzag(nanos), out);
}

/// Reads a serialized duration; `Err` names what is wrong.
pub fn deserialize_duration(bytes: &[u8]) -> std::result::Result<(i32, i32, i64), &'static str> {
    let mut input = bytes;
    let mut next = || read_unsigned_vint(&mut input).map(unzigzag);
    let (Some(m), Some(d), Some(n)) = (next(), next(), next()) else {
        return Err("truncated");
    };
    if !input.is_empty() {
        return Err("trailing bytes");
    }
    let months = i32::try_from(m).map_err(|_| "months out of range")?;
    let days = i32::try_from(d).map_err(|_| "days out of range")?;
    if !valid_duration(months, days, n) {
        return Err("months, days and nanoseconds must all have the same sign");
    }
    Ok((months, days, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn times_print_and_parse_as_cassandra() {
        assert_eq!(format_time(0), "00:00:00.000000000");
        let t = parse_time("08:12:54.123456789").unwrap();
        assert_eq!(format_time(t), "08:12:54.123456789");
        assert_eq!(parse_time("08:12:54.1").unwrap(), t - 23_456_789);
        assert_eq!(parse_time("1000").unwrap(), 1000);
        for bad in [
            "24:00:00",
            "1:2",
            "08:60:00",
            "-1",
            "86400000000000",
            "08:00:00.",
            "x",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_print_as_cassandra() {
        assert_eq!(format_duration(14, 3, 5_400_000_000_000), "1y2mo3d1h30m");
        assert_eq!(format_duration(0, -2, 0), "-2d");
        assert_eq!(format_duration(0, 0, 1_001_001), "1ms1us1ns");
        assert_eq!(format_duration(0, 0, 0), "");
    }

    #[test]
    fn durations_parse_in_every_form() {
        assert_eq!(
            parse_duration("1h30m").unwrap(),
            (0, 0, 90 * NANOS_PER_MINUTE)
        );
        assert_eq!(parse_duration("1y2mo").unwrap(), (14, 0, 0));
        assert_eq!(parse_duration("-2d").unwrap(), (0, -2, 0));
        assert_eq!(parse_duration("3W").unwrap(), (0, 21, 0));
        assert_eq!(parse_duration("2us3µs").unwrap(), (0, 0, 5_000));
        assert_eq!(parse_duration("P1D").unwrap(), (0, 1, 0));
        assert_eq!(parse_duration("P2W").unwrap(), (0, 14, 0));
        assert_eq!(
            parse_duration("P1Y2M3DT4H5M6S").unwrap(),
            (
                14,
                3,
                4 * NANOS_PER_HOUR + 5 * NANOS_PER_MINUTE + 6 * NANOS_PER_SECOND
            )
        );
        assert_eq!(parse_duration("PT2H").unwrap(), (0, 0, 2 * NANOS_PER_HOUR));
        assert_eq!(
            parse_duration("P0001-02-03T04:05:06").unwrap(),
            (
                14,
                3,
                4 * NANOS_PER_HOUR + 5 * NANOS_PER_MINUTE + 6 * NANOS_PER_SECOND
            )
        );
        for bad in [
            "",
            "-",
            "1",
            "h",
            "1x",
            "P",
            "PT",
            "P1H",
            "PM1Y",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn vints_match_cassandras_layout() {
        let enc = |v: u64| {
            let mut o = Vec::new();
            write_unsigned_vint(v, &mut o);
            o
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(128), [0x80, 0x80]);
        assert_eq!(enc(16_383), [0xBF, 0xFF]);
        assert_eq!(enc(16_384), [0xC0, 0x40, 0x00]);
        assert_eq!(enc(u64::MAX), [0xFF; 9]);
        let mut b = Vec::new();
        serialize_duration(1, 2, 3, &mut b);
        assert_eq!(b, [2, 4, 6]);
    }

    proptest! {
        #[test]
        fn durations_round_trip(m in any::<i32>(), d in any::<i32>(), n in any::<i64>()) {
            let (m, d, n) = if m < 0 || d < 0 || n < 0 {
                (-(m.unsigned_abs() as i64).min(i32::MAX as i64) as i32,
                 -(d.unsigned_abs() as i64).min(i32::MAX as i64) as i32,
                 -(n.unsigned_abs().min(i64::MAX as u64) as i64))
            } else { (m, d, n) };
            let mut b = Vec::new();
            serialize_duration(m, d, n, &mut b);
            prop_assert_eq!(deserialize_duration(&b), Ok((m, d, n)));
            let text = format_duration(m, d, n);
            if (m, d, n) == (0, 0, 0) {
                prop_assert_eq!(text, "");
            } else {
                prop_assert_eq!(parse_duration(&text).ok(), Some((m, d, n)));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..32),
                                       t in ".{0,24}") {
            let _ = deserialize_duration(&b);
            let _ = parse_duration(&t);
            let _ = parse_time(&t);
        }

        #[test]
        fn times_round_trip(n in 0..NANOS_PER_DAY) {
            prop_assert_eq!(parse_time(&format_time(n)).unwrap(), n);
        }
    }
}
