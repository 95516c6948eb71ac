//! What the host reads of the guard, and what it tells it from elsewhere:
//! breaker transitions and holds queued for the other tabs (drained by the
//! engine), the other tabs' news, the time the first open breaker turns
//! half-open, and `client.breakers()`.

use super::*;

impl Guard {
    /// Another tab's breaker for `key` opened, for `open_for_ms` more of a
    /// `period_ms` period.
    pub fn peer_open(&mut self, key: &str, now: f64, open_for_ms: f64, period_ms: f64) {
        if let Some(b) = self.breakers.as_mut() {
            b.force_open(key, now, open_for_ms, period_ms);
        }
    }

    pub fn peer_closed(&mut self, key: &str, now: f64) {
        if let Some(b) = self.breakers.as_mut() {
            b.force_close(key, now);
        }
    }

    /// Another tab was told to wait `wait_ms` on `key` with credentials
    /// `who`: the calls of that key and credentials wait, no longer than
    /// this client would wait itself.
    pub fn peer_hold(&mut self, key: &str, who: Credentials, wait_ms: f64, quota: bool, now: f64) {
        let why = if quota { Why::Quota } else { Why::Peer };
        self.limits.hold(
            HoldKey { key, who },
            now + wait_ms.min(self.hold_cap),
            why,
            now,
        );
    }

    /// Breaker transitions since the last drain (opens are counted here).
    pub fn drain_transitions(&mut self) -> Vec<Transition> {
        let Some(b) = self.breakers.as_mut() else {
            return Vec::new();
        };
        let t = b.drain_transitions();
        self.stats.breaker_opens += t.iter().filter(|t| t.to == BreakerState::Open).count() as u64;
        t
    }

    /// Holds set since the last drain, for the other tabs.
    pub fn drain_holds(&mut self) -> Vec<Hold> {
        std::mem::take(&mut self.holds)
    }

    /// `(time left, period)` of `key`'s open breaker.
    pub fn open_info(&self, key: &str, now: f64) -> Option<(f64, f64)> {
        self.breakers.as_ref()?.open_info(key, now)
    }

    /// When the first open breaker's period ends.
    pub fn next_half_open(&self) -> Option<f64> {
        self.breakers.as_ref()?.next_half_open()
    }

    /// Turns the breakers whose open period has ended half-open.
    pub fn refresh(&mut self, now: f64) {
        if let Some(b) = self.breakers.as_mut() {
            b.refresh(now);
        }
    }

    /// `client.breakers()`; empty with `breaker: false`.
    pub fn snapshot(&mut self, now: f64) -> Vec<Snapshot> {
        self.breakers
            .as_mut()
            .map_or_else(Vec::new, |b| b.snapshot(now))
    }
}
