//! Slow statements, logged as Cassandra's monitoring task logs them: a
//! statement slower than `slow_query_log_timeout` is counted, and every 5 s
//! one line says how many were slow, followed by the slowest few with their
//! text and time.
//!
//! Contract:
//! 1. Recording costs a clock read per statement and a lock only for a slow
//!    one; a statement's text is built only when it is slow.
//! 2. At most [`KEPT`] statements are kept per interval (the slowest), so an
//!    overloaded node writes a bounded amount of log per interval however
//!    many statements are slow.
//! 3. [`SlowLog::drain`] empties the interval: each slow statement is
//!    reported once.

use parking_lot::Mutex;
use std::time::Duration;

/// Statements kept per interval, slowest first.
pub const KEPT: usize = 5;
/// How often the gathered statements are logged (Cassandra's
/// `cassandra.monitoring_report_interval_ms` default).
pub const INTERVAL: Duration = Duration::from_secs(5);
/// A statement's text is cut here in the log.
const TEXT_LIMIT: usize = 300;

#[derive(Debug, Default)]
pub struct SlowLog {
    threshold: Option<Duration>,
    window: Mutex<Window>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Window {
    /// Slow statements this interval.
    pub count: u64,
    /// The slowest, slowest first: (time, text).
    pub slowest: Vec<(Duration, String)>,
}

impl SlowLog {
    pub fn new(threshold: Option<Duration>) -> SlowLog {
        SlowLog {
            threshold: threshold.filter(|d| !d.is_zero()),
            window: Mutex::default(),
        }
    }

    /// Whether statements are timed at all.
    pub fn enabled(&self) -> bool {
        self.threshold.is_some()
    }

    /// Counts a statement that took `took`, if slow; `text` runs only then.
    pub fn record(&self, took: Duration, text: impl FnOnce() -> String) {
        let Some(limit) = self.threshold else {
            return;
        };
        if took <= limit {
            return;
        }
        let mut w = self.window.lock();
        w.count += 1;
        if w.slowest.len() == KEPT && w.slowest.last().is_some_and(|(t, _)| *t >= took) {
            return;
        }
        let mut text = text();
        if text.len() > TEXT_LIMIT {
            let mut cut = TEXT_LIMIT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("...");
        }
        let at = w.slowest.partition_point(|(t, _)| *t >= took);
        w.slowest.insert(at, (took, text));
        w.slowest.truncate(KEPT);
    }

    /// The interval's slow statements, emptying it (contract 3).
    pub fn drain(&self) -> Window {
        std::mem::take(&mut *self.window.lock())
    }

    /// Logs and empties the interval, when anything was slow.
    pub fn report(&self) {
        let w = self.drain();
        if w.count == 0 {
            return;
        }
        let limit = self.threshold.unwrap_or_default().as_millis();
        tracing::info!(
            target: "strata::slow",
            slow = w.count,
            interval_ms = INTERVAL.as_millis() as u64,
            "{} statements were slower than {limit} ms in the last {} s",
            w.count,
            INTERVAL.as_secs()
        );
        for (took, text) in &w.slowest {
            tracing::info!(
                target: "strata::slow",
                ms = took.as_millis() as u64,
                "slow statement, {} ms: {text}",
                took.as_millis()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn only_statements_past_the_threshold_count_and_the_slowest_are_kept() {
        let log = SlowLog::new(Some(ms(500)));
        let mut built = 0;
        for t in [100, 500, 900, 600, 700, 1200, 800, 2000, 501] {
            log.record(ms(t), || {
                built += 1;
                format!("q{t}")
            });
        }
        let w = log.drain();
        assert_eq!(w.count, 7, "500 is not past a 500 ms threshold");
        let kept: Vec<&str> = w.slowest.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(kept, ["q2000", "q1200", "q900", "q800", "q700"]);
        assert_eq!(
            built,
            7 - 1,
            "501 arrived with five slower kept: no text built"
        );
        assert_eq!(log.drain(), Window::default(), "drained once");
    }

    #[test]
    fn zero_or_none_logs_nothing_and_long_text_is_cut() {
        for t in [None, Some(Duration::ZERO)] {
            let log = SlowLog::new(t);
            log.record(ms(10_000), || unreachable!("no text without a threshold"));
            assert_eq!(log.drain().count, 0);
        }
        let log = SlowLog::new(Some(ms(1)));
        log.record(ms(5), || "é".repeat(400));
        let w = log.drain();
        assert!(w.slowest[0].1.ends_with("..."));
        assert!(w.slowest[0].1.len() <= TEXT_LIMIT + 3);
    }
}
