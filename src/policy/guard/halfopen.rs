//! The half-open hold (README, "breaker.halfOpenProbes"): while a
//! key's probe is out, the other calls to it wait for its outcome instead
//! of failing. [`Guard::admit`] answers [`Admission::AwaitProbe`] with the
//! call's place in the key's queue; the breaker releases every waiter of a
//! key when a probe comes back or the key changes state (here, or by
//! another tab's news), and the host wakes them in queue order
//! ([`Guard::drain_released`]) to ask `admit` again: after a success they go
//! (through the concurrency slots, as any call), after a failure they are
//! refused without sending, and after a probe that decided nothing the
//! first of them probes. A waiter whose call aborts or runs out of time
//! leaves ([`Guard::stop_waiting`]).
//!
//! A probe that finds another tab probing the key (the cross-tab probe
//! lock is taken) keeps its permit, so this tab's other calls wait behind
//! it, and waits itself for that tab's news ([`Guard::watch_probe`]).

use super::*;

impl Guard {
    /// The call, holding the key's probe permit, waits for another tab's
    /// probe: released with the key's waiters (that tab's news changed the
    /// key's state, or a probe permit came back here), then it gives its
    /// permit back ([`Guard::abandon`]) and asks `admit` again. None when
    /// the key is no longer half-open: give the permit back and ask again.
    pub fn watch_probe(&mut self, c: &CallState) -> Option<ProbeWaiter> {
        self.breakers.as_mut()?.wait(&c.spec.key)
    }

    /// The waiter leaves its key's queue (abort, deadline); nothing when it
    /// has been released already.
    pub fn stop_waiting(&mut self, c: &CallState, id: ProbeWaiter) {
        if let Some(b) = self.breakers.as_mut() {
            b.stop_waiting(&c.spec.key, id);
        }
    }

    /// Waiters whose wait is over, in the order to wake them: each asks
    /// `admit` again.
    pub fn drain_released(&mut self) -> Vec<ProbeWaiter> {
        self.breakers
            .as_mut()
            .map_or_else(Vec::new, Breakers::drain_released)
    }

    /// Calls waiting for a probe's outcome.
    pub fn probe_waiters(&self) -> usize {
        self.breakers.as_ref().map_or(0, Breakers::waiting)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::super::tests::{call_cfg, cfg, send, settle, spec, KEY, UNAVAILABLE};
    use super::*;
    use crate::policy::options::LimiterConfig;

    /// A guard whose breaker for KEY is half-open at the returned time.
    fn half_open(client: &ClientConfig) -> (Guard, f64) {
        let cc = call_cfg(client);
        let mut g = Guard::new(client);
        for i in 0..3 {
            let now = f64::from(i);
            let mut c = g.start(spec(&cc, "GET"), now);
            let s = send(&mut g, &mut c, now);
            let _ = settle(&mut g, &mut c, &s, UNAVAILABLE, now);
        }
        let at = g.next_half_open().unwrap();
        (g, at)
    }

    fn waiter(g: &mut Guard, c: &mut CallState, now: f64) -> ProbeWaiter {
        match g.admit(c, now, false, 0.5) {
            Admission::AwaitProbe(id) => id,
            other => panic!("does not wait for the probe: {other:?}"),
        }
    }

    /// `n` calls that wait for the probe out at `t`, and their places.
    fn waiting(
        g: &mut Guard,
        cc: &CallConfig,
        t: f64,
        n: usize,
    ) -> (Vec<CallState<'static>>, Vec<ProbeWaiter>) {
        let mut calls: Vec<CallState> = (0..n).map(|_| g.start(spec(cc, "GET"), t)).collect();
        let ids = calls.iter_mut().map(|c| waiter(g, c, t)).collect();
        (calls, ids)
    }

    #[test]
    fn a_probe_success_releases_the_waiters_in_order_and_they_go_through_the_slots() {
        let mut client = cfg();
        client.concurrency = Some(LimiterConfig { max: 2, queue: 10 });
        let cc = call_cfg(&client);
        let (mut g, t) = half_open(&client);
        let mut probe = g.start(spec(&cc, "GET"), t);
        let s = send(&mut g, &mut probe, t);
        assert_eq!(s.permit, Some(Permit::Probe));
        let (mut calls, ids) = waiting(&mut g, &cc, t, 3);
        assert_eq!(g.probe_waiters(), 3);
        assert!(g.drain_released().is_empty());
        let sent = g.stats.attempts;
        assert_eq!(
            settle(&mut g, &mut probe, &s, Ended::Success, t + 50.0),
            Verdict::End
        );
        assert_eq!(g.drain_released(), ids, "released in queue order");
        assert_eq!(g.probe_waiters(), 0);
        // Closed now: they go, and the concurrency limit applies (2 slots).
        let slots: Vec<Acquire> = calls
            .iter_mut()
            .map(|c| {
                assert_eq!(
                    g.admit(c, t + 50.0, false, 0.5),
                    Admission::Go(Some(Permit::Normal))
                );
                g.acquire_slot()
            })
            .collect();
        assert_eq!(
            slots,
            [Acquire::Granted, Acquire::Granted, Acquire::Queued(0)]
        );
        assert_eq!(g.stats.attempts, sent, "nothing sent while waiting");
    }

    #[test]
    fn a_probe_failure_refuses_the_waiters_without_sending() {
        let client = cfg();
        let cc = call_cfg(&client);
        let (mut g, t) = half_open(&client);
        let mut probe = g.start(spec(&cc, "GET"), t);
        let s = send(&mut g, &mut probe, t);
        let (mut calls, ids) = waiting(&mut g, &cc, t, 2);
        let sent = g.stats.attempts;
        let _ = settle(&mut g, &mut probe, &s, UNAVAILABLE, t + 50.0);
        assert_eq!(g.drain_released(), ids);
        for c in &mut calls {
            assert_eq!(
                g.admit(c, t + 50.0, false, 0.5),
                Admission::Stop(Stop::CircuitOpen {
                    retry_in_ms: 2000.0
                })
            );
            assert_eq!(c.attempts(), 0);
        }
        assert_eq!(g.stats.attempts, sent);
    }

    #[test]
    fn abort_and_deadline_end_the_wait() {
        let client = cfg();
        let mut short = call_cfg(&client);
        short.deadline_ms = 1000.0;
        let cc = call_cfg(&client);
        let (mut g, t) = half_open(&client);
        let mut probe = g.start(spec(&cc, "GET"), t);
        let s = send(&mut g, &mut probe, t);
        let mut aborted = g.start(spec(&cc, "GET"), t);
        let mut timed = g.start(spec(&short, "GET"), t);
        let mut kept = g.start(spec(&cc, "GET"), t);
        let a = waiter(&mut g, &mut aborted, t);
        let d = waiter(&mut g, &mut timed, t);
        let k = waiter(&mut g, &mut kept, t);
        // The host ends these waits (its abort, its deadline timer): they
        // leave the queue, and are no longer released.
        g.stop_waiting(&aborted, a);
        g.stop_waiting(&timed, d);
        assert_eq!(g.probe_waiters(), 1);
        assert_eq!(
            g.admit(&mut timed, t + 1000.0, false, 0.5),
            Admission::Stop(Stop::Deadline)
        );
        let _ = settle(&mut g, &mut probe, &s, Ended::Success, t + 1500.0);
        assert_eq!(g.drain_released(), [k]);
    }

    #[test]
    fn schema_does_not_wait_for_the_probe_its_cache_answers() {
        let client = cfg();
        let cc = call_cfg(&client);
        let (mut g, t) = half_open(&client);
        let mut probe = g.start(spec(&cc, "GET"), t);
        let _s = send(&mut g, &mut probe, t);
        let mut schema = spec(&cc, "GET").clone();
        schema.prefer_cache = true;
        let mut c = g.start(&schema, t);
        assert_eq!(
            g.admit(&mut c, t, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { retry_in_ms: 0.0 })
        );
        assert_eq!(g.probe_waiters(), 0);
    }

    #[test]
    fn a_probe_behind_another_tabs_probe_hears_that_tabs_news() {
        let client = cfg();
        let cc = call_cfg(&client);
        let (mut g, t) = half_open(&client);
        // This tab's probe finds the cross-tab lock taken: it keeps its
        // permit (this tab's calls wait behind it) and watches the key.
        let mut probe = g.start(spec(&cc, "GET"), t);
        let Admission::Go(permit) = g.admit(&mut probe, t, false, 0.5) else {
            panic!("no probe")
        };
        assert_eq!(permit, Some(Permit::Probe));
        let watch = g.watch_probe(&probe).unwrap();
        let mut other = g.start(spec(&cc, "GET"), t);
        let w = waiter(&mut g, &mut other, t);
        let _ = g.drain_transitions();
        // The other tab's probe succeeded.
        g.peer_closed(KEY, t + 100.0);
        assert_eq!(g.drain_released(), [watch, w]);
        g.abandon(&probe, permit, t + 100.0);
        let t2 = g.drain_transitions();
        assert_eq!((t2.len(), t2[0].to), (1, BreakerState::Closed));
        for c in [&mut probe, &mut other] {
            assert_eq!(
                g.admit(c, t + 100.0, false, 0.5),
                Admission::Go(Some(Permit::Normal))
            );
        }
        // ... or failed: refused without sending.
        let (mut g, t) = half_open(&client);
        let mut probe = g.start(spec(&cc, "GET"), t);
        let Admission::Go(permit) = g.admit(&mut probe, t, false, 0.5) else {
            panic!("no probe")
        };
        let watch = g.watch_probe(&probe).unwrap();
        g.peer_open(KEY, t + 100.0, 2000.0, 2000.0);
        assert_eq!(g.drain_released(), [watch]);
        g.abandon(&probe, permit, t + 100.0);
        assert!(matches!(
            g.admit(&mut probe, t + 100.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { retry_in_ms }) if retry_in_ms > 0.0
        ));
        assert_eq!(g.watch_probe(&probe), None, "an open key is no wait");
    }
}
