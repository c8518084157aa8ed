//! The bounds of the command line's numbers.
//!
//! Owns: the value parsers every numeric flag of every command is parsed with,
//! and the one-line refusal of a value outside a flag's range:
//!
//! ```text
//! error: invalid value '100000' for '--threads': 100000 is not in 1..=1024 (one OS thread each)
//! ```
//!
//! Why at parse time: a number flag whose value reaches the code unchecked
//! turned into a capacity overflow (`--value-size 18446744073709551615`), a
//! float-to-duration panic (`--max-seconds=inf`), an allocation abort
//! (`--value-size 1099511627776`) and runs that never end (`--rows
//! 18446744073709551615`). A range checked where the flag is parsed stops all
//! of them before anything runs or touches the disk. Checks across flags (a
//! mutation that must fit the commit log, a simulation's number of flushes)
//! stay with the command, which runs them before it starts.
//!
//! Threads: parsing happens once, on the main thread, before any work.
//!
//! Contract:
//! 1. Every numeric flag is parsed by [`range`] (whole numbers and floats) or
//!    [`quantity`] (sizes, rates and durations written with units, `160MiB`,
//!    `1MB/s`, `2d`); the test `numeric_flags_are_bounded` walks the whole
//!    command tree and fails on a number parsed any other way.
//! 2. A range is inclusive and printed as `MIN..=MAX` in the flag's own unit,
//!    as the flag takes it back: the message's maximum parses.
//! 3. Floats must be finite: `inf` and `NaN` are refused whatever the range
//!    (they became durations and counts).
//! 4. The message says why the range ends where it does, so an operator who
//!    meets it knows whether to lower the value or to split the work.

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{Arg, Command};
use std::ffi::OsStr;
use std::fmt::Display;
use std::str::FromStr;

/// A number a flag can take: whole numbers of every width and `f64`.
pub trait Number: Copy + PartialOrd + Display + FromStr + Send + Sync + 'static {
    /// "a whole number" or "a number", for the refusal of text that does not parse.
    const KIND: &'static str;
    /// False for the floats contract 3 refuses.
    fn is_finite(self) -> bool {
        true
    }
}

macro_rules! whole {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const KIND: &'static str = "whole number";
        }
    )*};
}
whole!(u8, u16, u32, u64, usize, i32, i64);

impl Number for f64 {
    const KIND: &'static str = "number";
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// The value parser of a number flag (contract 1): `MIN..=MAX`, and why.
#[derive(Clone, Debug)]
pub struct Bounded<T> {
    min: T,
    max: T,
    why: &'static str,
}

/// A flag taking numbers in `min..=max`; `why` says what the bound protects
/// (contract 4).
pub fn range<T: Number>(min: T, max: T, why: &'static str) -> Bounded<T> {
    Bounded { min, max, why }
}

/// `--name` of the flag being parsed, or its value name for a positional.
fn flag_name(arg: Option<&Arg>) -> String {
    match arg {
        Some(a) => match a.get_long() {
            Some(long) => format!("--{long}"),
            None => a.get_id().to_string().to_uppercase(),
        },
        None => "value".to_string(),
    }
}

fn refuse(cmd: &Command, arg: Option<&Arg>, raw: &str, why_not: String) -> clap::Error {
    clap::Error::raw(
        ErrorKind::ValueValidation,
        format!(
            "invalid value '{raw}' for '{}': {why_not}\n",
            flag_name(arg)
        ),
    )
    .with_cmd(cmd)
}

impl<T: Number> TypedValueParser for Bounded<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let raw = value.to_string_lossy();
        let (min, max, why) = (self.min, self.max, self.why);
        match raw.trim().parse::<T>() {
            Ok(v) if v.is_finite() && min <= v && v <= max => Ok(v),
            Ok(v) if v.is_finite() => Err(refuse(
                cmd,
                arg,
                &raw,
                format!("{v} is not in {min}..={max} ({why})"),
            )),
            _ => Err(refuse(
                cmd,
                arg,
                &raw,
                format!("not a finite {} in {min}..={max} ({why})", T::KIND),
            )),
        }
    }
}

/// What a [`quantity`] measures, and so which units it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes: `169GB`, `160MiB`, a bare number is bytes.
    Size,
    /// An sstable size as Cassandra's `sstable_size_in_mb`: a bare number is MiB.
    SstableSize,
    /// Bytes per second: `1MB/s`.
    Rate,
    /// Seconds: `2d`, `48h`, `60s`, a bare number is seconds.
    Duration,
}

impl Unit {
    /// The value in the unit's base (bytes, bytes per second, seconds).
    pub fn parse(self, text: &str) -> strata::Result<f64> {
        match self {
            Unit::Size => strata::model::parse_size_bytes(text),
            Unit::SstableSize => strata::model::parse_sstable_size_bytes(text),
            Unit::Rate => strata::model::parse_rate_bytes_per_second(text),
            Unit::Duration => strata::model::parse_duration_seconds(text),
        }
    }
}

/// A size, rate or duration as the operator wrote it, checked against its flag's
/// range; the text goes on to the code that took text before (the simulator's
/// overrides), the value to the code that wants the number.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantity {
    pub text: String,
    /// Bytes, bytes per second or seconds.
    pub value: f64,
}

impl Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The value parser of a [`Quantity`] flag: `min..=max` written in the flag's
/// units (`"1MiB"`, `"1TiB"`), and why.
#[derive(Clone, Debug)]
pub struct QuantityParser {
    unit: Unit,
    min: &'static str,
    max: &'static str,
    why: &'static str,
}

/// A flag taking a size, rate or duration in `min..=max` (contract 1).
pub fn quantity(
    unit: Unit,
    min: &'static str,
    max: &'static str,
    why: &'static str,
) -> QuantityParser {
    QuantityParser {
        unit,
        min,
        max,
        why,
    }
}

impl TypedValueParser for QuantityParser {
    type Value = Quantity;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<Quantity, clap::Error> {
        let raw = value.to_string_lossy();
        let (min, max, why) = (self.min, self.max, self.why);
        // The bounds are this file's own constants; one that does not parse is
        // a mistake here, reported as such rather than as the operator's.
        let bound = |text: &str| {
            self.unit.parse(text).map_err(|e| {
                refuse(
                    cmd,
                    arg,
                    &raw,
                    format!("the bound '{text}' does not parse: {e}"),
                )
            })
        };
        let (lo, hi) = (bound(min)?, bound(max)?);
        match self.unit.parse(&raw) {
            Ok(v) if v.is_finite() && lo <= v && v <= hi => Ok(Quantity {
                text: raw.trim().to_string(),
                value: v,
            }),
            Ok(_) => Err(refuse(
                cmd,
                arg,
                &raw,
                format!("{} is not in {min}..={max} ({why})", raw.trim()),
            )),
            Err(e) => Err(refuse(
                cmd,
                arg,
                &raw,
                format!("{e}; the range is {min}..={max} ({why})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[arg(long, value_parser = range(1u64, 1024, "one OS thread each"))]
        threads: Option<u64>,
        #[arg(long, value_parser = range(0.001f64, 86_400.0, "a day"))]
        seconds: Option<f64>,
        #[arg(long, value_parser = quantity(Unit::Size, "1MiB", "1TiB", "a flush"))]
        size: Option<Quantity>,
    }

    fn err(args: &[&str]) -> String {
        let line = std::iter::once("t").chain(args.iter().copied());
        match T::try_parse_from(line) {
            Ok(t) => panic!("{args:?} accepted: {t:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_value_out_of_range_names_the_range_and_why() {
        let e = err(&["--threads", "100000"]);
        assert!(
            e.contains("invalid value '100000' for '--threads': 100000 is not in 1..=1024 (one OS thread each)"),
            "{e}"
        );
        let e = err(&["--threads=-1"]);
        assert!(e.contains("not a finite whole number in 1..=1024"), "{e}");
        let e = err(&["--threads", "18446744073709551616"]);
        assert!(e.contains("1..=1024"), "{e}");
        let ok = T::try_parse_from(["t", "--threads", "1024"]).unwrap();
        assert_eq!(ok.threads, Some(1024));
    }

    #[test]
    fn floats_must_be_finite_and_in_range() {
        for v in ["inf", "-inf", "NaN", "1e400"] {
            let e = err(&[&format!("--seconds={v}")]);
            assert!(
                e.contains("not a finite number in 0.001..=86400"),
                "{v}: {e}"
            );
        }
        let e = err(&["--seconds", "0"]);
        assert!(e.contains("0 is not in 0.001..=86400 (a day)"), "{e}");
        let ok = T::try_parse_from(["t", "--seconds", "86400"]).unwrap();
        assert_eq!(ok.seconds, Some(86_400.0));
    }

    #[test]
    fn quantities_are_bounded_in_their_own_units() {
        let e = err(&["--size", "1"]);
        assert!(e.contains("1 is not in 1MiB..=1TiB (a flush)"), "{e}");
        let e = err(&["--size", "18446744073709551615"]);
        assert!(e.contains("1MiB..=1TiB"), "{e}");
        let e = err(&["--size=-1"]);
        assert!(e.contains("the range is 1MiB..=1TiB"), "{e}");
        let ok = T::try_parse_from(["t", "--size", "1TiB"]).unwrap();
        assert_eq!(ok.size.map(|q| q.value), Some(1024f64.powi(4)));
    }
}
