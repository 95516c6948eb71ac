//! Probe-first retries (README, "breaker.consecutiveFailures"): a call to a key held
//! by its origin's burst (see `breaker/origin.rs`) waits for the origin's
//! probe instead of sending. While the probe is out it waits in its key's
//! queue ([`Admission::AwaitProbe`], the half-open hold's machinery); before
//! the probe's time (when a retry of the burst would typically go) it waits
//! that long ([`Admission::Wait`], never announced); when neither, it asks
//! `acquire` and goes as the probe. Each probe that failed while the call
//! was held counts as one of its own failed attempts, nothing sent: when
//! its attempts run out it ends with `CircuitOpenError`. Once the burst is
//! over (its probe succeeded), a call that was held goes after a wait drawn
//! over its backoff window, so that a probe that succeeded by chance
//! releases no herd; its retry was granted by the budget when it was
//! planned.

use super::*;
use crate::policy::options::Jitter;

/// How often a retry waiting for its origin's ramp asks again.
const RAMP_POLL_MS: f64 = 20.0;

/// How long a retry the budget denied leaves a probe that is due to the
/// burst's other retries before its denial stands.
const PROBE_GRACE_MS: f64 = 1000.0;

impl Guard {
    /// What a burst decides for the call before its breaker is asked;
    /// None: ask the breaker as usual.
    pub(super) fn burst_admission(
        &mut self,
        c: &mut CallState,
        now: f64,
        max_wait: f64,
        rand01: f64,
    ) -> Option<Admission> {
        let b = self.breakers.as_mut()?;
        let Some(burst) = b.burst(&c.spec.key, now) else {
            if let Some(due) = c.unbudgeted {
                return self.ramp_admission(c, due, now, max_wait);
            }
            // Released from a burst that ended: spread over the window
            // (unless the key's own breaker decides for it now).
            c.burst.take()?;
            if b.state(&c.spec.key, now) != BreakerState::Closed {
                return None;
            }
            let n = c.spent();
            let window = Backoff::new(c.retry.base_delay_ms, c.retry.max_delay_ms, Jitter::None)
                .delay(n, 0.0);
            let ms = (rand01 * window).min(c.deadline.remaining(now));
            return (ms > 0.0 && max_wait > 0.0).then_some(Admission::Wait {
                ms,
                why: Why::Burst,
                announce: false,
            });
        };
        if c.unbudgeted.is_some() && burst.lost > 0 {
            // The burst lost a probe (an outage, no blip): no ramp will
            // open, the budget's denial stands.
            c.burst = None;
            return Some(Admission::Stop(Stop::Budget));
        }
        let seen = match c.burst {
            Some((run, seen)) if run == burst.run => seen,
            _ => burst.lost,
        };
        let lost = burst.lost.saturating_sub(seen);
        c.burst = Some((burst.run, burst.lost));
        if lost > 0 {
            c.lost = c.lost.saturating_add(lost);
            let spent = c.spent();
            if spent >= c.retry.max_attempts.max(1) {
                return Some(Admission::Stop(Stop::CircuitOpen {
                    retry_in_ms: burst.probe_in_ms,
                }));
            }
        }
        if !burst.probing && burst.probe_in_ms <= 0.0 {
            // A retry the budget denied goes as the probe only if the
            // budget allows it now.
            // Else it leaves the probe to a retry the budget granted
            // (asking again shortly), for at most `PROBE_GRACE_MS`.
            if let Some(due) = c.unbudgeted {
                if self.budget.as_mut().is_some_and(|b| !b.try_retry(now)) {
                    return Some(self.unbudgeted_wait(due, now, max_wait));
                }
                self.granted(c, now);
            }
            // It goes as the probe: its own failure is no lost attempt.
            c.burst = Some((burst.run, burst.lost.saturating_add(1)));
            return None;
        }
        if max_wait <= 0.0 {
            // schema(): its cache answers at once.
            return Some(Admission::Stop(Stop::CircuitOpen {
                retry_in_ms: burst.probe_in_ms,
            }));
        }
        if burst.probing {
            return b.wait(&c.spec.key).map(Admission::AwaitProbe);
        }
        Some(Admission::Wait {
            ms: burst.probe_in_ms.min(max_wait),
            why: Why::Burst,
            announce: false,
        })
    }

    /// A retry the budget denied, of a burst that ended (its probe
    /// succeeded): it goes when the origin's ramp releases it (one, then
    /// two more for each success at the origin; the first failure there
    /// ends the ramp), charged to the budget as it goes; with no ramp (a
    /// failure ended it) the budget's denial stands.
    fn ramp_admission(
        &mut self,
        c: &mut CallState,
        due: f64,
        now: f64,
        max_wait: f64,
    ) -> Option<Admission> {
        let b = self.breakers.as_mut()?;
        match b.ramp_take(&c.spec.key) {
            Some(true) => {
                c.burst = None;
                self.granted(c, now);
                if let Some(budget) = self.budget.as_mut() {
                    budget.charge(now);
                }
                None
            }
            Some(false) => Some(self.unbudgeted_wait(now, now, max_wait)),
            // No ramp yet: the burst may still form, or its probe succeed.
            None => Some(self.unbudgeted_wait(due, now, max_wait)),
        }
    }

    /// A retry the budget denied, due at `due`, asks again shortly; past
    /// `PROBE_GRACE_MS` after `due` (no burst's probe went for it, no ramp
    /// opened) the budget's denial stands.
    fn unbudgeted_wait(&self, due: f64, now: f64, max_wait: f64) -> Admission {
        if now - due >= PROBE_GRACE_MS || max_wait <= 0.0 {
            return Admission::Stop(Stop::Budget);
        }
        Admission::Wait {
            ms: RAMP_POLL_MS.min(max_wait),
            why: Why::Burst,
            announce: false,
        }
    }

    /// The call's unbudgeted retry now counts as granted.
    fn granted(&mut self, c: &mut CallState, now: f64) {
        c.unbudgeted = None;
        self.stats.retries += 1;
        c.granted_at = Some(now);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::super::tests::{call_cfg, cfg, send, settle, spec, UNAVAILABLE};
    use super::*;

    /// A fresh client's page load in a blip: 6 calls over 3 endpoints of
    /// one backend, all out at once, all answered 503 at `t = 5`. The
    /// default budget (3 + 10 % of 6 calls) grants 3 retries.
    fn page(g: &mut Guard, cc: &CallConfig) -> Vec<CallState<'static>> {
        let specs: Vec<&'static Spec> = ["user", "user", "orders", "orders", "stock", "stock"]
            .iter()
            .map(|path| {
                &*Box::leak(Box::new(Spec {
                    key: format!("GET https://api.example/{path}"),
                    ..spec(cc, "GET").clone()
                }))
            })
            .collect();
        let mut calls: Vec<CallState> = specs.iter().map(|s| g.start(s, 0.0)).collect();
        let attempts: Vec<Attempt> = calls.iter_mut().map(|c| send(g, c, 0.0)).collect();
        for (c, a) in calls.iter_mut().zip(&attempts) {
            // Before: the 4th to 6th failed at once, denied by the budget.
            let v = settle(g, c, a, UNAVAILABLE, 5.0);
            assert_eq!(v, Verdict::Retry { delay_ms: 1000.0 });
        }
        assert_eq!((g.stats.retries, g.stats.budget_denied), (3, 3));
        calls
    }

    fn goes(g: &mut Guard, c: &mut CallState, now: f64) -> Attempt {
        let a = g.admit(c, now, false, 0.5);
        let Admission::Go(permit) = a else {
            panic!("does not go: {a:?}")
        };
        assert_eq!(g.acquire_slot(), Acquire::Granted);
        g.begin(c, permit, now).unwrap()
    }

    fn polls(g: &mut Guard, c: &mut CallState, now: f64) {
        let a = g.admit(c, now, false, 0.5);
        assert!(
            matches!(a, Admission::Wait { ms, why: Why::Burst, announce: false } if ms == RAMP_POLL_MS),
            "{a:?}"
        );
    }

    /// The burst's probe (a retry the budget granted) goes and succeeds.
    fn probe_succeeds(g: &mut Guard, calls: &mut [CallState], t: f64) {
        let Admission::Go(Some(Permit::Origin)) = g.admit(&mut calls[0], t, false, 0.5) else {
            panic!("no origin probe")
        };
        assert_eq!(g.acquire_slot(), Acquire::Granted);
        let probe = g.begin(&mut calls[0], Some(Permit::Origin), t).unwrap();
        for c in calls.iter_mut().skip(1) {
            assert!(matches!(
                g.admit(c, t, false, 0.5),
                Admission::AwaitProbe(_)
            ));
        }
        assert_eq!(
            settle(g, &mut calls[0], &probe, Ended::Success, t + 10.0),
            Verdict::End
        );
        assert_eq!(g.drain_released().len(), 5);
    }

    #[test]
    fn a_bursts_retries_the_budget_denied_go_by_a_ramp_of_successes_after_its_probe() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut calls = page(&mut g, &cc);
        let t = 1005.0;
        probe_succeeds(&mut g, &mut calls, t);
        let t = t + 10.0;
        // The ones the budget denied: one goes, the next two wait for it.
        let first = goes(&mut g, &mut calls[3], t);
        polls(&mut g, &mut calls[4], t);
        polls(&mut g, &mut calls[5], t + RAMP_POLL_MS);
        assert_eq!(
            settle(&mut g, &mut calls[3], &first, Ended::Success, t + 30.0),
            Verdict::End
        );
        // Its success releases two more, charged to the budget as they go.
        let t = t + 40.0;
        let a4 = goes(&mut g, &mut calls[4], t);
        let a5 = goes(&mut g, &mut calls[5], t);
        assert_eq!((a4.attempt, a5.attempt), (2, 2));
        assert_eq!(g.stats.retries, 6);
        let b = g.budget.as_ref().unwrap();
        assert_eq!(b.retries_in_window(t), 6);
        // The budget's own grants stay as they were: nothing more now.
        assert!(!g.budget_allows(t));
    }

    #[test]
    fn a_failure_stops_the_ramp_and_the_budgets_denial_stands() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut calls = page(&mut g, &cc);
        let t = 1005.0;
        probe_succeeds(&mut g, &mut calls, t);
        let t = t + 10.0;
        let first = goes(&mut g, &mut calls[3], t);
        assert!(matches!(
            settle(&mut g, &mut calls[3], &first, UNAVAILABLE, t + 30.0),
            Verdict::Fail { .. } | Verdict::Retry { .. }
        ));
        // No ramp: the others ask again for a while (a burst may form and
        // probe again), then their denial stands, nothing sent.
        polls(&mut g, &mut calls[4], t + 40.0);
        let late = 1005.0 + PROBE_GRACE_MS;
        for i in [4, 5] {
            assert_eq!(
                g.admit(&mut calls[i], late, false, 0.5),
                Admission::Stop(Stop::Budget)
            );
            assert_eq!(calls[i].attempts(), 1);
        }
    }

    #[test]
    fn a_burst_whose_probe_failed_opens_no_ramp_and_the_budgets_denial_stands() {
        // The tail of an outage: the burst's first probe fails. The
        // retries the budget denied end at once, denied, nothing sent;
        // the next probe's success opens no ramp.
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut calls = page(&mut g, &cc);
        let t = 1005.0;
        let Admission::Go(Some(Permit::Origin)) = g.admit(&mut calls[0], t, false, 0.5) else {
            panic!("no origin probe")
        };
        assert_eq!(g.acquire_slot(), Acquire::Granted);
        let probe = g.begin(&mut calls[0], Some(Permit::Origin), t).unwrap();
        for c in calls.iter_mut().skip(1) {
            assert!(matches!(
                g.admit(c, t, false, 0.5),
                Admission::AwaitProbe(_)
            ));
        }
        assert!(matches!(
            settle(&mut g, &mut calls[0], &probe, UNAVAILABLE, t + 10.0),
            Verdict::Fail { .. } | Verdict::Retry { .. }
        ));
        g.drain_released();
        for i in [3, 4, 5] {
            assert_eq!(
                g.admit(&mut calls[i], t + 20.0, false, 0.5),
                Admission::Stop(Stop::Budget),
                "call {i}"
            );
            assert_eq!(calls[i].attempts(), 1);
        }
        // The next probe succeeds: the run ends with no ramp.
        let t = t + 3000.0;
        let a = g.admit(&mut calls[1], t, false, 0.5);
        let Admission::Go(permit @ Some(_)) = a else {
            panic!("no second probe: {a:?}")
        };
        assert_eq!(g.acquire_slot(), Acquire::Granted);
        let probe = g.begin(&mut calls[1], permit, t).unwrap();
        assert_eq!(
            settle(&mut g, &mut calls[1], &probe, Ended::Success, t + 10.0),
            Verdict::End
        );
        let b = g.breakers.as_mut().unwrap();
        assert_eq!(b.ramp_take(&calls[3].spec.key), None);
    }

    #[test]
    fn a_run_that_partly_succeeded_opens_no_ramp() {
        // An overload: 4 of the page's 6 calls fail, 2 succeed. No burst
        // formed (two endpoints failed together, one of them twice): the
        // run ends with no ramp, and the retry the budget denied stays
        // denied.
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let specs: Vec<&'static Spec> = ["user", "user", "orders", "orders", "stock", "stock"]
            .iter()
            .map(|path| {
                &*Box::leak(Box::new(Spec {
                    key: format!("GET https://api.example/{path}"),
                    ..spec(&cc, "GET").clone()
                }))
            })
            .collect();
        let mut calls: Vec<CallState> = specs.iter().map(|s| g.start(s, 0.0)).collect();
        let attempts: Vec<Attempt> = calls.iter_mut().map(|c| send(&mut g, c, 0.0)).collect();
        for (c, a) in calls.iter_mut().zip(&attempts).take(4) {
            let v = settle(&mut g, c, a, UNAVAILABLE, 5.0);
            assert_eq!(v, Verdict::Retry { delay_ms: 1000.0 });
        }
        assert_eq!((g.stats.retries, g.stats.budget_denied), (3, 1));
        for i in [4, 5] {
            let v = settle(&mut g, &mut calls[i], &attempts[i], Ended::Success, 6.0);
            assert_eq!(v, Verdict::End);
        }
        polls(&mut g, &mut calls[3], 1005.0);
        assert_eq!(
            g.admit(&mut calls[3], 1005.0 + PROBE_GRACE_MS, false, 0.5),
            Admission::Stop(Stop::Budget)
        );
        assert_eq!(calls[3].attempts(), 1);
    }
}
