//! The engine's one clock: the host's `performance.now()`, kept monotonic
//! and moved on by the host's own timers when it stands still.
//!
//! # Why
//!
//! Every deadline, timeout, hold and breaker period is a difference of
//! two readings of this clock. A host whose `performance.now` is frozen or
//! runs backwards (a test stub, a polyfill) would otherwise make those
//! differences zero or negative: an attempt's timer fires, finds its
//! timeout not yet due by the clock, re-arms itself, and the call never
//! ends. Timers are the host's word that time has passed, so a fired timer
//! is evidence: the clock is at least at the time the timer was set for.
//!
//! # Two rules, and why each
//!
//! * A reading earlier than the last one (or not a number) continues from
//!   the last one: the clock never steps back, and a host that jumped back
//!   once runs on from where it was, not frozen until it catches up.
//! * A fired timer moves the clock to its due time only when the clock
//!   fell short of it by more than [`TIMER_SLACK_MS`], or did not move at
//!   all since the timer was set. Real hosts fire timers up to about a
//!   millisecond early by `performance.now` (measured in Node 20); taking
//!   every such hair as evidence would make the clock run ahead of the host
//!   over many timers, shortening every period it measures.
//!
//! # Proven by
//!
//! The tests below; `tests/e2e/hardening.test.mjs` stubs `performance.now` in
//! Node and checks that a call to a backend that never answers still ends
//! by its timeout and deadline.

/// How far short of a fired timer's due time a healthy clock may be.
pub const TIMER_SLACK_MS: f64 = 10.0;

/// A monotonic clock over the host's readings (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// Added to the host's reading.
    offset: f64,
    /// The last time given.
    last: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    pub const fn new() -> Clock {
        Clock {
            offset: 0.0,
            last: 0.0,
        }
    }

    /// The time now, from the host's reading `host` (ms): never earlier
    /// than a time given before.
    pub fn read(&mut self, host: f64) -> f64 {
        let t = host + self.offset;
        if !t.is_finite() {
            return self.last;
        }
        if t >= self.last {
            self.last = t;
        } else {
            // Stepped back: run on from the last time.
            self.offset = self.last - host;
        }
        self.last
    }

    /// A host timer set at `set_at` (this clock's time) to fire at `due`
    /// has fired, just after a [`Clock::read`]: the time now, moved on to
    /// `due` when the clock stood still or fell far short of it.
    pub fn timer_fired(&mut self, set_at: f64, due: f64) -> f64 {
        let now = self.last;
        let short = due - now;
        if short > 0.0 && (short > TIMER_SLACK_MS || now <= set_at) {
            self.offset += short;
            self.last = due;
        }
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timer fires: the host is read, then the timer tells.
    fn fire(c: &mut Clock, set_at: f64, due: f64, host: f64) -> f64 {
        c.read(host);
        c.timer_fired(set_at, due)
    }

    #[test]
    fn follows_a_healthy_host() {
        let mut c = Clock::new();
        assert_eq!(c.read(5.0), 5.0);
        assert_eq!(c.read(17.5), 17.5);
        // A timer on time, or a hair early: the host's reading stands.
        assert_eq!(fire(&mut c, 17.5, 317.5, 318.0), 318.0);
        assert_eq!(fire(&mut c, 318.0, 618.0, 617.2), 617.2);
        assert_eq!(c.read(700.0), 700.0);
    }

    /// Issue 27 item 7: with `performance.now` frozen, an attempt's alarm
    /// found itself never due. Fired timers now move the clock on.
    #[test]
    fn a_frozen_host_moves_on_with_its_timers() {
        let mut c = Clock::new();
        let start = c.read(1000.0);
        assert_eq!(c.read(1000.0), start);
        // The attempt's 300 ms timeout fires: 300 ms have passed.
        assert_eq!(fire(&mut c, start, start + 300.0, 1000.0), 1300.0);
        assert_eq!(c.read(1000.0), 1300.0);
        // Even a timer shorter than the slack, when nothing moved at all.
        assert_eq!(fire(&mut c, 1300.0, 1303.0, 1000.0), 1303.0);
        // A timer dropped before it fired proves nothing: no call, no move.
        assert_eq!(c.read(1000.0), 1303.0);
    }

    #[test]
    fn a_host_running_backwards_never_takes_the_clock_back() {
        let mut c = Clock::new();
        let mut host = 10_000.0;
        let mut last = c.read(host);
        for _ in 0..100 {
            host -= 7.0;
            let t = c.read(host);
            assert!(t >= last);
            last = t;
        }
        assert_eq!(last, 10_000.0);
        let fired = fire(&mut c, last, last + 300.0, host - 1.0);
        assert_eq!(fired, 10_300.0);
        // A host that stepped back once runs on from there.
        let mut c = Clock::new();
        c.read(5000.0);
        assert_eq!(c.read(0.0), 5000.0);
        assert_eq!(c.read(40.0), 5040.0);
    }

    #[test]
    fn readings_that_are_no_number_keep_the_last_time() {
        let mut c = Clock::new();
        c.read(250.0);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(c.read(bad), 250.0);
        }
        assert_eq!(fire(&mut c, 250.0, 550.0, f64::NAN), 550.0);
        assert_eq!(c.read(251.0), 551.0);
        assert_eq!(c.read(300.0), 600.0);
    }

    /// Timers a hair early, many times over, do not make the clock run
    /// ahead of a healthy host.
    #[test]
    fn early_timers_do_not_drift_a_healthy_clock() {
        let mut c = Clock::new();
        let mut host = 0.0;
        for _ in 0..10_000 {
            let set_at = c.read(host);
            host += 9.2; // a 10 ms timer, 0.8 ms early
            fire(&mut c, set_at, set_at + 10.0, host);
        }
        assert_eq!(c.read(host), host);
    }
}
