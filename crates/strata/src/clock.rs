//! Time, injected (DESIGN.md §3).
//!
//! Every "now" in the engine — TTL expiry, gc grace, default write timestamps,
//! flush and compaction intervals — comes from the [`Clock`] handed to the database
//! at open. No other engine module reads the system time.
//!
//! Invariants:
//! 1. `now_micros()` never goes backwards for a given clock (the simulated clock
//!    refuses to be set back; the system clock is clamped to the last value seen).
//! 2. `now_seconds() == now_micros().div_euclid(1_000_000)`.
//! 3. A clock before 1970 reads negative, never 0 or any other stand-in: the
//!    engine refuses to stamp writes with it ([`check_writable_time`]).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Microseconds since the Unix epoch (Cassandra's write-timestamp unit).
    fn now_micros(&self) -> i64;

    /// Seconds since the Unix epoch (Cassandra's local deletion time unit).
    fn now_seconds(&self) -> i64 {
        self.now_micros().div_euclid(1_000_000)
    }
}

/// Wall-clock time, made monotonic so that two writes from one process never get
/// decreasing default timestamps when NTP steps the clock back.
#[derive(Debug)]
pub struct SystemClock {
    /// The largest reading so far; starts below every reading, so that a
    /// clock before 1970 reads as what it is (invariant 3).
    last_micros: AtomicI64,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            last_micros: AtomicI64::new(i64::MIN),
        }
    }
}

impl SystemClock {
    pub fn new() -> Arc<SystemClock> {
        Arc::new(SystemClock::default())
    }
}

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        let wall = micros_since_epoch(std::time::SystemTime::now());
        let prev = self.last_micros.fetch_max(wall, Ordering::AcqRel);
        prev.max(wall)
    }
}

/// Microseconds from the Unix epoch to `t`: negative before 1970 (invariant
/// 3), saturating at `i64`'s range (±292,000 years).
pub fn micros_since_epoch(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_micros())
            .map(|m| -m)
            .unwrap_or(i64::MIN + 1),
    }
}

/// Whether `now_micros` can stamp a write: not before the epoch. A clock set
/// before 1970 once read as 0 here, so every overwrite tied with the value it
/// replaced (equal timestamps: the greater value wins, not the newer), and
/// 1,925 of 2,000 overwritten rows read back their old value. Writes are
/// refused instead (`schema::TableSchema`'s mutation builders), naming the
/// clock's reading.
pub fn check_writable_time(now_micros: i64) -> crate::error::Result<()> {
    if now_micros >= 0 {
        return Ok(());
    }
    Err(crate::error::Error::Clock(format!(
        "the clock reads {}, before 1970-01-01: write timestamps and deletion times taken \
         from it would be wrong (an overwrite could lose to the value it replaces), so \
         writes are refused until the system time is set right",
        format_micros_utc(now_micros)
    )))
}

/// A clock that moves only when told to: tests and benchmarks run days of TTL and
/// gc-grace behaviour in seconds with it.
#[derive(Debug)]
pub struct SimClock {
    micros: AtomicI64,
}

impl SimClock {
    /// A simulated clock starting at `start_micros` since the epoch.
    pub fn new(start_micros: i64) -> Arc<SimClock> {
        Arc::new(SimClock {
            micros: AtomicI64::new(start_micros),
        })
    }

    /// A simulated clock at 2026-01-01T00:00:00Z, a fixed point so runs are repeatable.
    pub fn fixed() -> Arc<SimClock> {
        SimClock::new(1_767_225_600_000_000)
    }

    pub fn advance_micros(&self, delta: i64) {
        self.micros.fetch_add(delta.max(0), Ordering::AcqRel);
    }

    pub fn advance_seconds(&self, delta: i64) {
        self.advance_micros(delta.saturating_mul(1_000_000));
    }

    /// Moves the clock to `micros` if that is later than now (invariant 1).
    pub fn set_micros(&self, micros: i64) {
        self.micros.fetch_max(micros, Ordering::AcqRel);
    }
}

impl Clock for SimClock {
    fn now_micros(&self) -> i64 {
        self.micros.load(Ordering::Acquire)
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` for a timestamp in microseconds since the epoch.
pub fn format_micros_utc(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_before_1970_reads_negative_and_refuses_writes() {
        use std::time::{Duration, UNIX_EPOCH};
        let before = UNIX_EPOCH - Duration::from_secs(86_400);
        assert_eq!(micros_since_epoch(before), -86_400_000_000);
        assert_eq!(micros_since_epoch(UNIX_EPOCH), 0);
        assert!(check_writable_time(0).is_ok());
        let err = check_writable_time(-86_400_000_000).unwrap_err();
        assert!(matches!(err, crate::error::Error::Clock(_)), "{err}");
        assert!(err.to_string().contains("1969-12-31T00:00:00"), "{err}");
    }

    #[test]
    fn sim_clock_moves_only_forward() {
        let c = SimClock::new(10_000_000);
        assert_eq!(c.now_seconds(), 10);
        c.advance_seconds(5);
        assert_eq!(c.now_seconds(), 15);
        c.set_micros(1);
        assert_eq!(
            c.now_seconds(),
            15,
            "set_micros must not move the clock back"
        );
        c.advance_micros(-100);
        assert_eq!(c.now_micros(), 15_000_000);
    }

    #[test]
    fn negative_time_rounds_down() {
        let c = SimClock::new(-1);
        assert_eq!(c.now_seconds(), -1);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now_micros();
        let b = c.now_micros();
        assert!(b >= a);
        assert!(
            a > 1_600_000_000_000_000,
            "system clock should be after 2020"
        );
    }

    #[test]
    fn utc_formatting_matches_known_instants() {
        assert_eq!(format_micros_utc(0), "1970-01-01T00:00:00.000000Z");
        // 2026-11-25T04:32:49.5Z
        assert_eq!(
            format_micros_utc(1_795_581_169_500_000),
            "2026-11-25T04:32:49.500000Z"
        );
        assert_eq!(format_micros_utc(-1), "1969-12-31T23:59:59.999999Z");
    }
}
