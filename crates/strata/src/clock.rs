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
#[derive(Debug, Default)]
pub struct SystemClock {
    last_micros: AtomicI64,
}

impl SystemClock {
    pub fn new() -> Arc<SystemClock> {
        Arc::new(SystemClock::default())
    }
}

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        let prev = self.last_micros.fetch_max(wall, Ordering::AcqRel);
        prev.max(wall)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
