//! One budget of time for the whole call.
//!
//! Why: per-attempt timeouts alone let a call with three attempts and their
//! backoffs run for several times the timeout, long after the user gave up.
//! A deadline fixed when the call starts bounds the queue wait, every attempt
//! and every sleep together; each attempt gets `min(timeout, remaining)`.

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deadline {
    start_ms: f64,
    total_ms: f64,
}

impl Deadline {
    /// A negative or NaN `deadline_ms` is taken as 0 (already expired).
    pub fn new(now_ms: f64, deadline_ms: f64) -> Self {
        Self {
            start_ms: now_ms,
            total_ms: deadline_ms.max(0.0),
        }
    }

    /// Time left, in `0..=deadline_ms` even if the clock steps backwards.
    pub fn remaining(&self, now_ms: f64) -> f64 {
        let left = self.start_ms + self.total_ms - now_ms;
        if left > 0.0 {
            left.min(self.total_ms)
        } else {
            0.0
        }
    }

    pub fn expired(&self, now_ms: f64) -> bool {
        self.remaining(now_ms) <= 0.0
    }

    /// How long the next attempt may take: `min(timeout_ms, remaining)`.
    pub fn attempt_timeout(&self, now_ms: f64, timeout_ms: f64) -> f64 {
        timeout_ms.min(self.remaining(now_ms)).max(0.0)
    }

    pub fn elapsed(&self, now_ms: f64) -> f64 {
        let elapsed = now_ms - self.start_ms;
        if elapsed > 0.0 {
            elapsed
        } else {
            0.0
        }
    }

    pub fn start_ms(&self) -> f64 {
        self.start_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_down_to_expiry() {
        let d = Deadline::new(1000.0, 500.0);
        assert_eq!(d.start_ms(), 1000.0);
        assert_eq!(d.remaining(1000.0), 500.0);
        assert_eq!(d.remaining(1200.0), 300.0);
        assert!(!d.expired(1499.0));
        assert!(d.expired(1500.0));
        assert_eq!(d.remaining(9999.0), 0.0);
        assert_eq!(d.elapsed(1200.0), 200.0);
    }

    #[test]
    fn attempt_timeout_is_the_smaller() {
        let d = Deadline::new(0.0, 1000.0);
        assert_eq!(d.attempt_timeout(0.0, 300.0), 300.0);
        assert_eq!(d.attempt_timeout(800.0, 300.0), 200.0);
        assert_eq!(d.attempt_timeout(2000.0, 300.0), 0.0);
        assert_eq!(d.attempt_timeout(0.0, f64::NAN), 1000.0);
        assert_eq!(d.attempt_timeout(0.0, -5.0), 0.0);
    }

    #[test]
    fn clock_stepping_back_or_odd_values() {
        let d = Deadline::new(1000.0, 500.0);
        assert_eq!(d.remaining(0.0), 500.0);
        assert_eq!(d.elapsed(0.0), 0.0);
        assert_eq!(d.remaining(f64::NAN), 0.0);
        assert!(d.expired(f64::NAN));
        assert_eq!(d.elapsed(f64::NAN), 0.0);
        let bad = Deadline::new(0.0, f64::NAN);
        assert!(bad.expired(0.0));
        assert!(Deadline::new(0.0, -1.0).expired(0.0));
    }
}
