//! One round of attempts: the attempt itself and, while it has not
//! answered, hedges (`hedge: { afterMs, max }`: `max` over the whole call,
//! every hedge an attempt toward `maxAttempts`).
//!
//! # Why hedge
//!
//! A slow answer is often one slow server or connection, and a second
//! attempt sent after the usual answer time (a fixed `afterMs`, or the
//! endpoint's observed p95) usually beats it.
//!
//! # Why it cannot become a storm
//!
//! A hedge is a retry for the budget (denied when the budget is spent),
//! goes out only while the breaker is closed, only for calls that may be
//! replayed (a method in `retry.methods` or an idempotency key), only into
//! a concurrency slot that is free at once (never queued), never past a
//! Retry-After hold or a rate limit's spacing, never after a leg was
//! refused with a wait (that wait then holds every call of the key), and
//! only within the deadline.
//!
//! # Which attempt wins
//!
//! The first attempt to answer in a way no other could improve on (a
//! success, a status that is no failure, a parse error) wins, and the
//! others are aborted through their AbortControllers; a failure while
//! another attempt is still out is a breaker sample, and the round waits
//! for the rest. Tested in `src/policy/guard.rs` (`hedge*`),
//! `tests/browser.rs` (`hedge_*`) and `tests/e2e/hedge.test.mjs`.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use super::Drive;
use crate::policy::guard::Attempt;
use crate::policy::ratelimit::Quota;
use crate::web::call::Prepared;
use crate::web::fetch::{self, AttemptEnd, Decided};
use crate::web::host::{epoch_ms, now_ms, rand01};
use crate::web::runtime::{sleep, Stop};

/// An attempt in flight.
struct Sent<'a> {
    end: Pin<Box<dyn Future<Output = (AttemptEnd, Option<Quota>)> + 'a>>,
    stop: Option<Stop>,
    send: Attempt,
}

/// A round of attempts: the call's attempt and the hedges of it in
/// flight, each sending what was settled for the round before its
/// admission (`prepared`, see `steps.rs` `prepare`).
pub(super) struct Round<'r, 'a> {
    d: &'r mut Drive<'a>,
    prepared: &'r Prepared,
    live: Vec<Sent<'r>>,
    /// Until the core refuses one (its count is over the whole call).
    hedging: bool,
}

impl<'r, 'a: 'r> Round<'r, 'a> {
    /// Sends the call's attempt `first` (its slot taken) and any hedges of
    /// it the policy core allows; ends with the attempt that decides.
    pub(super) async fn run(
        d: &'r mut Drive<'a>,
        first: Attempt,
        prepared: &'r Prepared,
    ) -> Decided {
        let engine = d.engine;
        let hedging = d.call.spec.cfg.hedge.is_some();
        let mut r = Round {
            d,
            prepared,
            live: Vec::new(),
            hedging,
        };
        let leg = r.launch(first, false);
        r.live.push(leg);
        loop {
            let last = r.live.iter().map(|s| s.send.started_ms);
            let last = last.fold(f64::MIN, f64::max);
            let due = r
                .hedging
                .then(|| engine.guard().hedge_due(&r.d.c, last, now_ms()))
                .flatten();
            let mut hedge_due = due.map(sleep);
            let live = &mut r.live;
            let ended_at = poll_fn(|cx| {
                for (i, s) in live.iter_mut().enumerate() {
                    if let Poll::Ready(end) = s.end.as_mut().poll(cx) {
                        return Poll::Ready(Some((i, end)));
                    }
                }
                let hedge_now = hedge_due
                    .as_mut()
                    .is_some_and(|wait| Pin::new(wait).poll(cx).is_ready());
                if hedge_now {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                }
            })
            .await;
            let Some((i, (end, quota))) = ended_at else {
                match r.d.decide(|g, c| g.hedge(c, now_ms(), rand01())) {
                    Some(send) => {
                        let leg = r.launch(send, true);
                        r.live.push(leg);
                    }
                    None => r.hedging = false,
                }
                continue;
            };
            let sent = r.live.swap_remove(i);
            engine.release_slot();
            let now = now_ms();
            if engine.guard().decides(&end.as_ended(false)) || r.live.is_empty() {
                return r.decided(sent.send, end, quota, now);
            }
            // Failed while another attempt is still out: a sample (and what
            // its answer said of the quota), and wait on.
            if let AttemptEnd::Status { response, .. } = &end {
                fetch::discard(response);
            }
            r.d.decide(|g, c| {
                g.leg_failed(
                    c,
                    sent.send.permit,
                    &end.as_ended(false),
                    quota.as_ref(),
                    now,
                    epoch_ms(),
                )
            });
        }
    }

    /// The round ends with attempt `send`, which ended so (`now`): the
    /// others still out are aborted, their slots and permits given back.
    fn decided(self, send: Attempt, end: AttemptEnd, quota: Option<Quota>, now: f64) -> Decided {
        let engine = self.d.engine;
        for other in self.live {
            if let Some(stop) = &other.stop {
                stop.abort();
            }
            engine.release_slot();
            self.d.decide(|g, c| g.abandon(c, other.send.permit, now));
        }
        if let AttemptEnd::Done(_) = end {
            engine.answered_in(&self.d.c, now - send.started_ms, now);
        }
        Decided { end, send, quota }
    }

    /// Starts one attempt as the policy core set it out (`hedge`: not the
    /// first of its round), under its timeout; announced (an `attempt`
    /// event) as its request goes out.
    fn launch(&self, send: Attempt, hedge: bool) -> Sent<'r> {
        let (engine, call) = (self.d.engine, self.d.call);
        call.cancel.begin_attempt(send.attempt);
        let stop = Stop::new();
        let transport = call.layer().transport().unwrap_or(engine.transport());
        let leg = fetch::Leg {
            hedge,
            prepared: self.prepared,
            events: engine.events(),
            adopted: None,
        };
        Sent {
            stop: stop.as_ref().ok().cloned(),
            end: Box::pin(fetch::attempt(call, transport, send, stop, leg)),
            send,
        }
    }
}
