//! Observed answer times per endpoint, for hedging at the 95th percentile
//! (`hedge: { afterMs: 'p95' }`).
//!
//! Why the p95 of recent answers: a hedge sent after the typical answer
//! time doubles the load; one sent after nearly every answer has come
//! (the slowest 5 %) adds about 5 % and cuts exactly the tail. The figure
//! must follow the endpoint as it changes, so only answers within the
//! window count, and until [`MIN_SAMPLES`] of them exist there is no
//! figure and no hedge: a guess would be a hedge on every call.
//!
//! Memory is fixed: the last [`KEPT`] answer times per key, and at most
//! [`MAX_KEYS`] keys (the least recently answered one makes room).

/// Answer times kept per key.
pub const KEPT: usize = 64;
/// Answers within the window needed before there is a p95.
pub const MIN_SAMPLES: usize = 20;
/// Keys tracked at most.
pub const MAX_KEYS: usize = 256;

#[derive(Debug, Clone)]
struct Recent {
    key: String,
    /// `(at_ms, took_ms)`, a ring; `len` of them written.
    times: [(f64, f64); KEPT],
    next: usize,
    len: usize,
    last_used: u64,
}

#[derive(Debug, Clone)]
pub struct Latencies {
    window_ms: f64,
    keys: Vec<Recent>,
    tick: u64,
}

impl Latencies {
    pub fn new(window_ms: f64) -> Self {
        Self {
            window_ms,
            keys: Vec::new(),
            tick: 0,
        }
    }

    /// An answer for `key` that took `took_ms`, at `now_ms`.
    pub fn record(&mut self, key: &str, now_ms: f64, took_ms: f64) {
        if !took_ms.is_finite() || took_ms < 0.0 {
            return;
        }
        self.tick += 1;
        let i = match self.keys.iter().position(|r| r.key == key) {
            Some(i) => i,
            None => {
                if self.keys.len() >= MAX_KEYS {
                    if let Some(lru) = (0..self.keys.len())
                        .min_by_key(|&i| self.keys.get(i).map_or(u64::MAX, |r| r.last_used))
                    {
                        self.keys.swap_remove(lru);
                    }
                }
                self.keys.push(Recent {
                    key: key.to_owned(),
                    times: [(0.0, 0.0); KEPT],
                    next: 0,
                    len: 0,
                    last_used: 0,
                });
                self.keys.len() - 1
            }
        };
        if let Some(r) = self.keys.get_mut(i) {
            if let Some(slot) = r.times.get_mut(r.next) {
                *slot = (now_ms, took_ms);
            }
            r.next = (r.next + 1) % KEPT;
            r.len = (r.len + 1).min(KEPT);
            r.last_used = self.tick;
        }
    }

    /// The 95th percentile of `key`'s answer times within the window, or
    /// None with fewer than [`MIN_SAMPLES`] of them.
    pub fn p95(&self, key: &str, now_ms: f64) -> Option<f64> {
        let r = self.keys.iter().find(|r| r.key == key)?;
        let since = now_ms - self.window_ms;
        let mut recent: Vec<f64> = r
            .times
            .iter()
            .take(r.len)
            .filter(|(at, _)| *at > since)
            .map(|(_, took)| *took)
            .collect();
        if recent.len() < MIN_SAMPLES {
            return None;
        }
        // At most KEPT values: an insertion sort is enough, and it keeps
        // std's general sort (several KB of wasm) out of the module.
        for i in 1..recent.len() {
            let mut j = i;
            while j > 0 && recent.get(j - 1) > recent.get(j) {
                recent.swap(j - 1, j);
                j -= 1;
            }
        }
        // Nearest rank: the smallest time at or above 95 % of the answers.
        let rank = (recent.len() * 95).div_ceil(100);
        recent.get(rank.saturating_sub(1)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_figure_until_enough_answers_in_the_window() {
        let mut l = Latencies::new(60_000.0);
        for i in 0..MIN_SAMPLES - 1 {
            l.record("k", i as f64, 10.0);
        }
        assert_eq!(l.p95("k", 100.0), None);
        l.record("k", 100.0, 10.0);
        assert_eq!(l.p95("k", 100.0), Some(10.0));
        // All of them older than the window: no figure again.
        assert_eq!(l.p95("k", 70_000.0), None);
        assert_eq!(l.p95("other", 100.0), None);
    }

    #[test]
    fn p95_is_the_nearest_rank_of_recent_answers() {
        let mut l = Latencies::new(60_000.0);
        // 19 fast answers and one slow: the p95 of 20 is the 19th, fast.
        for _ in 0..19 {
            l.record("k", 0.0, 20.0);
        }
        l.record("k", 0.0, 1000.0);
        assert_eq!(l.p95("k", 1.0), Some(20.0));
        // 40 answers, 10 % slow: the p95 is slow.
        for _ in 0..16 {
            l.record("k", 0.0, 20.0);
        }
        for _ in 0..3 {
            l.record("k", 0.0, 1000.0);
        }
        assert_eq!(l.p95("k", 1.0), Some(1000.0));
    }

    #[test]
    fn only_the_last_answers_count_and_bad_times_are_ignored() {
        let mut l = Latencies::new(60_000.0);
        for _ in 0..KEPT {
            l.record("k", 0.0, 5000.0);
        }
        for _ in 0..KEPT {
            l.record("k", 1.0, 30.0);
        }
        l.record("k", 1.0, f64::NAN);
        l.record("k", 1.0, -1.0);
        assert_eq!(l.p95("k", 2.0), Some(30.0));
    }

    #[test]
    fn keys_are_bounded_and_the_least_recently_answered_goes() {
        let mut l = Latencies::new(60_000.0);
        for _ in 0..MIN_SAMPLES {
            l.record("keep", 0.0, 7.0);
        }
        for k in 0..MAX_KEYS * 2 {
            l.record(&k.to_string(), 0.0, 1.0);
            if k % 100 == 0 {
                l.record("keep", 0.0, 7.0);
            }
        }
        assert!(l.keys.len() <= MAX_KEYS);
        assert_eq!(l.p95("keep", 1.0), Some(7.0));
        assert!(!l.keys.iter().any(|r| r.key == "0"), "the oldest key went");
    }
}
