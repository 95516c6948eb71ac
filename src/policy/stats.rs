//! Counters a user reads with `client.stats()`.
//!
//! Why `amplification`: attempts per logical call is the one number that
//! shows a retry storm (it climbs towards `maxAttempts`) and its cure (near 1,
//! below 1 with dedupe or an open breaker). `inFlight` and `queued` come from
//! the limiter at the boundary.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub requests: u64,
    pub attempts: u64,
    pub retries: u64,
    pub timeouts: u64,
    pub failures: u64,
    pub breaker_opens: u64,
    pub budget_denied: u64,
    pub queue_rejected: u64,
    pub deduped: u64,
    pub fallbacks: u64,
}

impl Stats {
    /// Attempts per request; 0 before any request.
    pub fn amplification(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.attempts as f64 / self.requests as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification() {
        let mut s = Stats::default();
        assert_eq!(s.amplification(), 0.0);
        s.requests = 4;
        s.attempts = 6;
        assert_eq!(s.amplification(), 1.5);
        s.deduped = 2;
        s.requests = 8;
        assert_eq!(s.amplification(), 0.75);
    }
}
