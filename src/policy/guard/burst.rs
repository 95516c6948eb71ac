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
//! releases no herd.
//!
//! A retry the budget denied, of a key that failed together with others of
//! its origin, waits with them too ([`CallState::unbudgeted`]): it goes if
//! the burst's first probe succeeded (a blip, not an outage's tail) and no
//! failure came at the origin by the end of its wait, charged to the
//! budget as it goes; else the budget's denial stands ([`Stop::Budget`]).
//!
//! The wait of a call released after a blip (no probe lost) is drawn from
//! `RELEASE_FROM..RELEASE_TO` times its backoff, not from the start of the
//! window: at the end of an outage every client's probes come back in the
//! same second, and the retries of the pages that failed in the outage's
//! last moments (which look like a blip) would pile onto them (the
//! page-load outage's peak, tests/pagesim.rs: 1.71x when they went at once
//! or by a slow start, 1.46x this way); and a failure at the origin during
//! the wait still stops the budget's denied ones.

use super::*;
use crate::policy::options::Jitter;

/// How often a retry the budget denied, waiting with a burst that may yet
/// form or probe, asks again.
const POLL_MS: f64 = 20.0;

/// A call released after a blip goes at a time drawn from this share of
/// its backoff window to [`RELEASE_TO`] (issue 42; tests/pagesim.rs).
const RELEASE_FROM: f64 = 0.6;
const RELEASE_TO: f64 = 1.3;

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
            // Released from a burst that ended: spread over the window
            // (unless the key's own breaker decides for it now), then a
            // retry the budget denied goes if its origin's blip is over.
            // (A retry the budget denied waits too when its time came
            // after the probe's success: it was never held.)
            let held = c.burst.take().is_some();
            let first = !c.spread && (held || (c.unbudgeted.is_some() && b.released(&c.spec.key)));
            if first && b.state(&c.spec.key, now) == BreakerState::Closed {
                c.spread = true;
                if let Some(wait) = spread(c, now, max_wait, rand01) {
                    return Some(wait);
                }
            }
            let due = c.unbudgeted?;
            return self.unbudgeted_admission(c, due, now, max_wait);
        };
        if c.unbudgeted.is_some() && burst.lost > 0 {
            // The burst lost a probe (an outage, no blip): nothing will
            // release it, the budget's denial stands.
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

    /// A retry the budget denied, held by no burst: it goes (charged to
    /// the budget) if its origin's blip is over and nothing failed there
    /// since; else it asks again shortly (the burst may yet form or probe)
    /// until its denial stands. None: it goes.
    fn unbudgeted_admission(
        &mut self,
        c: &mut CallState,
        due: f64,
        now: f64,
        max_wait: f64,
    ) -> Option<Admission> {
        let b = self.breakers.as_mut()?;
        if !b.released(&c.spec.key) {
            return Some(self.unbudgeted_wait(due, now, max_wait));
        }
        self.granted(c, now);
        if let Some(budget) = self.budget.as_mut() {
            budget.charge(now);
        }
        None
    }

    /// A retry the budget denied, due at `due`, asks again shortly; past
    /// `PROBE_GRACE_MS` after `due` (no burst's probe went for it, its
    /// origin's blip not over) the budget's denial stands.
    fn unbudgeted_wait(&self, due: f64, now: f64, max_wait: f64) -> Admission {
        if now - due >= PROBE_GRACE_MS || max_wait <= 0.0 {
            return Admission::Stop(Stop::Budget);
        }
        Admission::Wait {
            ms: POLL_MS.min(max_wait),
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

/// The wait of a call released from a burst that ended: drawn over its
/// backoff window, or from `RELEASE_FROM..RELEASE_TO` of it when it lost no
/// probe (a blip); None when there is nothing to wait.
fn spread(c: &CallState, now: f64, max_wait: f64, rand01: f64) -> Option<Admission> {
    let window = Backoff::new(c.retry.base_delay_ms, c.retry.max_delay_ms, Jitter::None)
        .delay(c.spent(), 0.0);
    let (from, to) = if c.lost == 0 {
        (RELEASE_FROM, RELEASE_TO)
    } else {
        (0.0, 1.0)
    };
    let ms = (window * (from + rand01 * (to - from))).min(c.deadline.remaining(now));
    (ms > 0.0 && max_wait > 0.0).then_some(Admission::Wait {
        ms,
        why: Why::Burst,
        announce: false,
    })
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::super::tests::{
        call_cfg, cfg, page_fails, page_specs, probe_goes, send, settle, UNAVAILABLE,
    };
    use super::*;

    /// A fresh client's page load in a blip: 6 calls over 3 endpoints of
    /// one backend, all out at once, all answered 503 at `t = 5`. The
    /// default budget (3 + 10 % of 6 calls) grants 3 retries.
    fn page(g: &mut Guard, cc: &CallConfig) -> Vec<CallState<'static>> {
        // Each retries after 1000 ms. Before: the 4th to 6th failed at
        // once, denied by the budget.
        let calls = page_fails(g, cc);
        assert_eq!((g.stats.retries, g.stats.budget_denied), (3, 3));
        calls
    }

    fn polls(g: &mut Guard, c: &mut CallState, now: f64) {
        let a = g.admit(c, now, false, 0.5);
        assert!(
            matches!(a, Admission::Wait { ms, why: Why::Burst, announce: false } if ms == POLL_MS),
            "{a:?}"
        );
    }

    /// The burst's probe (a retry the budget granted) goes and succeeds.
    fn probe_succeeds(g: &mut Guard, calls: &mut [CallState], t: f64) {
        let probe = probe_goes(g, calls, t);
        assert_eq!(
            settle(g, &mut calls[0], &probe, Ended::Success, t + 10.0),
            Verdict::End
        );
        assert_eq!(g.drain_released().len(), 5);
    }

    /// After the probe's success, each held call waits a time drawn from
    /// `RELEASE_FROM..RELEASE_TO` of its backoff window (1000 ms).
    fn waits_to_be_released(g: &mut Guard, c: &mut CallState, now: f64) -> f64 {
        let a = g.admit(c, now, false, 0.5);
        let Admission::Wait {
            ms,
            why: Why::Burst,
            announce: false,
        } = a
        else {
            panic!("not spread: {a:?}")
        };
        assert_eq!(
            ms,
            1000.0 * (RELEASE_FROM + 0.5 * (RELEASE_TO - RELEASE_FROM))
        );
        now + ms
    }

    /// The page in a blip whose probe succeeds at 1005 ms: each held call
    /// waits to be released, all until the same time (returned).
    fn released(g: &mut Guard, cc: &CallConfig) -> (Vec<CallState<'static>>, f64) {
        let mut calls = page(g, cc);
        probe_succeeds(g, &mut calls, 1005.0);
        let mut at = 0.0;
        for c in calls.iter_mut().skip(1) {
            at = waits_to_be_released(g, c, 1015.0);
        }
        (calls, at)
    }

    #[test]
    fn a_blips_retries_the_budget_denied_go_after_its_probe_later_in_their_window() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        // Every held call, granted (1, 2) or denied (3 to 5) by the budget,
        // waits into its window, then goes.
        let (mut calls, at) = released(&mut g, &cc);
        for c in calls.iter_mut().skip(1) {
            assert_eq!(send(&mut g, c, at).attempt, 2);
        }
        // The denied ones charged to the budget as they went.
        assert_eq!(g.stats.retries, 6);
        let b = g.budget.as_ref().unwrap();
        assert_eq!(b.retries_in_window(at), 6);
        assert!(!g.budget_allows(at));
    }

    #[test]
    fn a_failure_at_the_origin_during_their_wait_stops_the_budgets_denied_ones() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let (mut calls, at) = released(&mut g, &cc);
        // The first to go fails: the origin is not over its trouble.
        let first = send(&mut g, &mut calls[1], at);
        assert!(matches!(
            settle(&mut g, &mut calls[1], &first, UNAVAILABLE, at + 10.0),
            Verdict::Fail { .. } | Verdict::Retry { .. }
        ));
        // The budget's own grant goes; the denied ones wait no release
        // (they ask again), and once their time is PROBE_GRACE_MS past
        // they end denied, nothing sent.
        assert_eq!(send(&mut g, &mut calls[2], at + 20.0).attempt, 2);
        polls(&mut g, &mut calls[3], at + 20.0);
        let late = 1005.0 + PROBE_GRACE_MS;
        assert!(late > at + 20.0);
        for i in [3, 4, 5] {
            assert_eq!(
                g.admit(&mut calls[i], late, false, 0.5),
                Admission::Stop(Stop::Budget)
            );
            assert_eq!(calls[i].attempts(), 1);
        }
    }

    #[test]
    fn a_burst_whose_probe_failed_releases_none_and_the_budgets_denial_stands() {
        // The tail of an outage: the burst's first probe fails. The
        // retries the budget denied end at once, denied, nothing sent;
        // the next probe's success releases none.
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut calls = page(&mut g, &cc);
        let t = 1005.0;
        let probe = probe_goes(&mut g, &mut calls, t);
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
        // The next probe succeeds: the run ends, releasing none.
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
        assert!(!b.released(&calls[3].spec.key));
    }

    #[test]
    fn a_run_that_partly_succeeded_releases_none() {
        // An overload: 4 of the page's 6 calls fail, 2 succeed. No burst
        // formed (two endpoints failed together, one of them twice): the
        // run ends releasing none, and the retry the budget denied stays
        // denied.
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let specs = page_specs(&cc);
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
