//! Counters a user reads with `client.stats()`.
//!
//! Why `amplification`: attempts per logical call is the one number that
//! shows a retry storm (it climbs towards `maxAttempts`) and its cure (near 1,
//! below 1 with dedupe or an open breaker). `inFlight` and `queued` come from
//! the limiter at the boundary.

#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Stats {
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub requests: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub attempts: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub retries: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub timeouts: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub failures: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub breaker_opens: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub budget_denied: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub queue_rejected: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub deduped: u64,
    #[cfg_attr(target_arch = "wasm32", serde(serialize_with = "number"))]
    pub fallbacks: u64,
}

/// A counter as a JS number, as `as f64` writes it (exact below 2^53, which
/// no counter reaches). serde-wasm-bindgen's own u64 path range-checks and
/// formats the value into an error, linking integer formatting: +0.9 KB gzip.
#[cfg(target_arch = "wasm32")]
fn number<S: serde::Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*n as f64)
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
