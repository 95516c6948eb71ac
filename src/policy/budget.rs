//! Retry budget: retries may add at most `ratio` to the load, plus a few.
//!
//! # Why a budget and not just `maxAttempts`
//!
//! With 3 attempts per call, a backend that fails everything receives three
//! times its normal traffic, exactly when it can least take it. A budget
//! ties retries to calls: while most calls succeed, the rare failure is
//! retried freely; when everything fails, retries stay near `ratio` of the
//! traffic (`minRetries` lets a quiet client still retry its occasional
//! failure).
//!
//! # The guarantee, exactly
//!
//! Time is cut into buckets of `w = windowMs / 10`: bucket `k` covers
//! `[k * w, (k + 1) * w)` of the caller's clock (a reading earlier than one
//! already seen counts as the latest one seen). For **every run of at most 10
//! consecutive buckets** (so every window of `windowMs` aligned to a bucket
//! boundary, and every shorter aligned one):
//!
//! `retries granted in the run <= minRetries + ratio * calls recorded in the run`.
//!
//! It holds because a retry is granted only if, for each k in 1..=10, the
//! last k buckets (the new retry included) satisfy the bound: the last retry
//! of any run was checked against the run's suffix it ends, and later calls
//! only raise the right-hand side. The property test below proves exactly
//! this statement over random sequences, clock steps back and far jumps.
//!
//! # Its cost
//!
//! Of checking every suffix, not just the whole window: calls long past do
//! not fund retries now. A stretch of buckets without calls gets
//! `minRetries` retries in all, however many calls came before it; under
//! steady traffic the whole-window bound is the one that binds.

use super::option_table::{
    check, int, ms, table, unread, Given, Kind, Opt, OptionsError, Rule, MAX_DURATION_MS,
};
use super::window::Ring;

table! {
    /// `budget`'s options (README, "Client options").
    BUDGET, BudgetMembers {
        ratio: Opt {
            key: "ratio",
            kind: Kind::Num,
            rule: Rule::Range(0.0, 1.0, "must be from 0 to 1"),
        },
        min_retries: int("minRetries", 0.0, MAX_DURATION_MS),
        window_ms: ms("windowMs", 0.0),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    pub ratio: f64,
    pub min_retries: u32,
    pub window_ms: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            ratio: 0.1,
            min_retries: 3,
            window_ms: 10_000.0,
        }
    }
}

impl BudgetConfig {
    pub(super) fn from_members(g: &[Given], d: Self) -> Result<Self, OptionsError> {
        let m = BudgetMembers::of(g).ok_or_else(|| unread("budget"))?;
        check("budget", &BUDGET, g)?;
        Ok(Self {
            ratio: m.ratio.num().unwrap_or(d.ratio),
            min_retries: m.min_retries.num().map_or(d.min_retries, |v| v as u32),
            window_ms: m.window_ms.num().unwrap_or(d.window_ms),
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    calls: u64,
    retries: u64,
}

#[derive(Debug, Clone)]
pub struct RetryBudget {
    ratio: f64,
    min_retries: f64,
    ring: Ring<Counts>,
}

impl RetryBudget {
    /// A negative or NaN ratio is taken as 0; a window under 1 ms as 1 ms.
    pub fn new(cfg: &BudgetConfig) -> Self {
        Self {
            ratio: cfg.ratio.max(0.0),
            min_retries: f64::from(cfg.min_retries),
            ring: Ring::new(cfg.window_ms),
        }
    }

    /// Counts a call that makes its first attempt.
    pub fn record_call(&mut self, now_ms: f64) {
        self.ring
            .add(now_ms, |c| c.calls = c.calls.saturating_add(1));
    }

    /// `true`, and records the retry, when the budget allows one more.
    pub fn try_retry(&mut self, now_ms: f64) -> bool {
        let (mut calls, mut retries) = (0u64, 0u64);
        let allowed = self.ring.by_age(now_ms).iter().all(|c| {
            calls = calls.saturating_add(c.calls);
            retries = retries.saturating_add(c.retries);
            (retries.saturating_add(1)) as f64 <= self.min_retries + self.ratio * calls as f64
        });
        if allowed {
            self.ring
                .add(now_ms, |c| c.retries = c.retries.saturating_add(1));
        }
        allowed
    }

    /// Records a retry the budget did not grant (one a blip
    /// released, `guard/burst.rs`): later retries in its window see it.
    pub fn charge(&mut self, now_ms: f64) {
        self.ring
            .add(now_ms, |c| c.retries = c.retries.saturating_add(1));
    }

    /// Hands back the retry granted at `at_ms` that was not made after all
    /// (a `beforeRetry` hook stopped it), while its bucket is in the window.
    pub fn give_back(&mut self, at_ms: f64) {
        self.ring
            .amend(at_ms, |c| c.retries = c.retries.saturating_sub(1));
    }

    /// Calls in the 10 buckets ending with the current one.
    pub fn calls_in_window(&self, now_ms: f64) -> u64 {
        self.ring.by_age(now_ms).iter().map(|c| c.calls).sum()
    }

    /// Retries in the 10 buckets ending with the current one.
    pub fn retries_in_window(&self, now_ms: f64) -> u64 {
        self.ring.by_age(now_ms).iter().map(|c| c.retries).sum()
    }
}

// Native only: proptest is a native dev-dependency, and `wasm-pack test`
// builds every test target for wasm32.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn budget(ratio: f64, min_retries: u32) -> RetryBudget {
        RetryBudget::new(&BudgetConfig {
            ratio,
            min_retries,
            window_ms: 10_000.0,
        })
    }

    fn grant_all(b: &mut RetryBudget, now: f64) -> u32 {
        let mut n = 0;
        while b.try_retry(now) {
            n += 1;
        }
        n
    }

    #[test]
    fn min_retries_without_calls() {
        let mut b = budget(0.1, 3);
        assert_eq!(grant_all(&mut b, 0.0), 3);
        assert_eq!(b.retries_in_window(0.0), 3);
        assert_eq!(b.calls_in_window(0.0), 0);
    }

    #[test]
    fn ratio_of_calls_in_the_same_bucket() {
        let mut b = budget(0.1, 3);
        for _ in 0..100 {
            b.record_call(500.0);
        }
        assert_eq!(grant_all(&mut b, 600.0), 13);
        assert_eq!(b.calls_in_window(600.0), 100);
    }

    #[test]
    fn a_retry_given_back_can_be_granted_again() {
        let mut b = budget(0.1, 3);
        assert_eq!(grant_all(&mut b, 0.0), 3);
        b.give_back(0.0);
        assert_eq!(b.retries_in_window(0.0), 2);
        assert!(b.try_retry(10.0));
        assert!(!b.try_retry(10.0));
    }

    #[test]
    fn zero_budget_denies_every_retry() {
        let mut b = budget(0.0, 0);
        b.record_call(0.0);
        assert!(!b.try_retry(0.0));
    }

    #[test]
    fn window_slides_and_forgets() {
        let mut b = budget(0.1, 3);
        assert_eq!(grant_all(&mut b, 0.0), 3);
        assert_eq!(grant_all(&mut b, 9_999.0), 0);
        assert_eq!(b.retries_in_window(9_999.0), 3);
        assert_eq!(b.retries_in_window(10_000.0), 0);
        assert_eq!(grant_all(&mut b, 10_000.0), 3);
    }

    #[test]
    fn old_calls_do_not_fund_a_burst_now() {
        let mut b = budget(0.1, 3);
        for _ in 0..100 {
            b.record_call(0.0);
        }
        // Buckets 5 and after hold no call: any run of them gets minRetries at most.
        assert_eq!(grant_all(&mut b, 5_000.0), 3);
        assert_eq!(grant_all(&mut b, 6_000.0), 0);
        // New calls fund new retries: run 5..=6 now allows 3 + 0.1 * 10.
        for _ in 0..10 {
            b.record_call(6_000.0);
        }
        assert_eq!(grant_all(&mut b, 6_000.0), 1);
        assert_eq!(b.retries_in_window(6_000.0), 4);
    }

    #[test]
    fn clock_stepping_back_counts_at_the_latest_time() {
        let mut b = budget(0.1, 0);
        for _ in 0..10 {
            b.record_call(50_000.0);
        }
        b.record_call(1.0);
        assert_eq!(b.calls_in_window(0.0), 11);
        assert!(b.try_retry(49_000.0));
        assert!(!b.try_retry(49_000.0));
    }

    #[test]
    fn far_jump_forward_forgets_everything() {
        let mut b = budget(0.1, 3);
        assert_eq!(grant_all(&mut b, 0.0), 3);
        assert_eq!(grant_all(&mut b, 1e300), 3);
        assert_eq!(b.retries_in_window(f64::INFINITY), 3);
        assert_eq!(grant_all(&mut b, f64::INFINITY), 0);
    }

    #[test]
    fn odd_configs_do_not_panic() {
        for ratio in [f64::NAN, -1.0, f64::INFINITY] {
            let mut b = RetryBudget::new(&BudgetConfig {
                ratio,
                min_retries: 0,
                window_ms: f64::NAN,
            });
            b.record_call(f64::NAN);
            let _ = b.try_retry(f64::NAN);
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Call,
        Retry,
        Advance(f64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Call),
            4 => Just(Op::Retry),
            3 => (0.0..3000.0f64).prop_map(Op::Advance),
            1 => (-500.0..0.0f64).prop_map(Op::Advance),
            1 => (0.0..100_000.0f64).prop_map(Op::Advance),
        ]
    }

    proptest! {
        /// The module's guarantee: every run of at most 10 consecutive
        /// buckets holds at most minRetries + ratio * its calls retries.
        #[test]
        fn retries_never_exceed_the_bound_in_any_run(
            ratio in 0.0..=1.0f64,
            min_retries in 0..5u32,
            window_ms in 1.0..20_000.0f64,
            start in -1e6..1e6f64,
            ops in prop::collection::vec(op(), 1..300),
        ) {
            let mut b = RetryBudget::new(&BudgetConfig { ratio, min_retries, window_ms });
            let width = window_ms / 10.0;
            let (mut now, mut latest) = (start, f64::NEG_INFINITY);
            // (bucket, is_retry) of every call and granted retry.
            let mut events: Vec<(i64, bool)> = Vec::new();
            for op in ops {
                match op {
                    Op::Advance(dt) => now += dt,
                    Op::Call => {
                        b.record_call(now);
                        latest = latest.max(now);
                        events.push(((latest / width).floor() as i64, false));
                    }
                    Op::Retry => {
                        if b.try_retry(now) {
                            latest = latest.max(now);
                            events.push(((latest / width).floor() as i64, true));
                        }
                    }
                }
            }
            for &(first, _) in &events {
                for len in 1..=10 {
                    let run = first..first + len;
                    let calls = events.iter().filter(|(k, r)| !r && run.contains(k)).count();
                    let retries = events.iter().filter(|(k, r)| *r && run.contains(k)).count();
                    prop_assert!(
                        retries as f64 <= f64::from(min_retries) + ratio * calls as f64,
                        "run {run:?}: {retries} retries for {calls} calls"
                    );
                }
            }
        }
    }
}
