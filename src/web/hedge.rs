//! One round of attempts: the attempt itself and, while it has not
//! answered, up to `hedge.max` hedges (`hedge: { afterMs, max }`).
//!
//! Why hedge: a slow answer is often one slow server or connection, and a
//! second attempt sent after the usual answer time (a fixed `afterMs`, or
//! the endpoint's observed p95) usually beats it. Why it cannot become a
//! storm: a hedge is a retry for the budget (denied when the budget is
//! spent), goes out only while the breaker is closed, only for calls that
//! may be replayed (a method in `retry.methods` or an idempotency key), only
//! into a concurrency slot that is free at once (never queued), never past a
//! Retry-After hold or a rate limit's spacing, and only within the deadline. The first attempt to answer in a way no other could
//! improve on (a success, a status that is no failure, a parse error) wins,
//! and the others are aborted through their AbortControllers; a failure
//! while another attempt is still out is a breaker sample, and the round
//! waits for the rest. Tested in `tests/browser.rs` (`hedge_*`).

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use super::call::Call;
use super::cancel::{gate_timer, Gate, Stop};
use super::engine::Engine;
use super::fetch::{self, AttemptEnd, Decided};
use super::host::{now_ms, rand01};
use crate::policy::breaker::{Permit, State as BreakerState};
use crate::policy::classify::{method_may_retry, sample, Outcome, Sample};
use crate::policy::deadline::Deadline;
use crate::policy::options::{HedgeAfter, HedgeConfig, RetryConfig};
use crate::policy::ratelimit::{Admit, Quota};

/// An attempt in flight.
struct Sent<'a> {
    end: Pin<Box<dyn Future<Output = (AttemptEnd, Option<Quota>)> + 'a>>,
    stop: Option<Stop>,
    permit: Option<Permit>,
    phase: &'static str,
    started: f64,
}

impl Engine {
    /// Sends the call's next attempt (its slot and `permit` already taken)
    /// and any hedges of it; ends with the attempt that decides.
    pub async fn round(
        &self,
        call: &Call,
        deadline: &Deadline,
        permit: Option<Permit>,
        retry: &RetryConfig,
    ) -> Decided {
        let mut live = vec![self.send(call, deadline, permit, false)];
        let hedge = call.cfg.hedge;
        let mut left = hedge.map_or(0, |h| h.max);
        let failures = self.cfg.failure_statuses();
        loop {
            let due = hedge
                .filter(|_| left > 0)
                .and_then(|h| self.hedge_after(call, h))
                .map(|after| {
                    let last = live.iter().map(|s| s.started).fold(f64::MIN, f64::max);
                    after - (now_ms() - last)
                });
            let gate = Gate::new();
            let _timer = due.map(|ms| gate_timer(&gate, ms));
            let mut wait = gate.wait();
            let ended = poll_fn(|cx| {
                for (i, s) in live.iter_mut().enumerate() {
                    if let Poll::Ready(end) = s.end.as_mut().poll(cx) {
                        return Poll::Ready(Some((i, end)));
                    }
                }
                match due {
                    Some(_) if Pin::new(&mut wait).poll(cx).is_ready() => Poll::Ready(None),
                    _ => Poll::Pending,
                }
            })
            .await;
            let Some((i, (end, quota))) = ended else {
                left -= 1;
                match self.hedge(call, deadline, retry) {
                    Some(sent) => live.push(sent),
                    None => left = 0,
                }
                continue;
            };
            let sent = live.swap_remove(i);
            self.release_slot();
            let decides = match &end {
                AttemptEnd::Status { status, .. } => !failures.contains(status),
                AttemptEnd::Network(_) | AttemptEnd::Timeout => false,
                AttemptEnd::Done(_) | AttemptEnd::Parse(_) | AttemptEnd::Cancelled => true,
            };
            if decides || live.is_empty() {
                for other in live {
                    if let Some(stop) = &other.stop {
                        stop.abort();
                    }
                    self.release_slot();
                    self.breaker_record(call, other.permit, Sample::Ignored);
                }
                if let (AttemptEnd::Done(_), Some(_)) = (&end, hedge) {
                    let now = now_ms();
                    let mut st = self.st.borrow_mut();
                    st.latencies
                        .record(&call.breaker_key, now, now - sent.started);
                }
                return Decided {
                    end,
                    permit: sent.permit,
                    phase: sent.phase,
                    quota,
                };
            }
            // Failed while another attempt is still out: a sample (and what
            // its answer said of the quota), and wait on.
            let outcome = match &end {
                AttemptEnd::Status {
                    status, response, ..
                } => {
                    fetch::discard(response);
                    if call.cfg.rate_limit {
                        self.observe_quota(call, quota.as_ref());
                    }
                    Outcome::Status(*status)
                }
                AttemptEnd::Timeout => {
                    self.st.borrow_mut().stats.timeouts += 1;
                    Outcome::Timeout
                }
                _ => Outcome::Network,
            };
            self.breaker_record(call, sent.permit, sample(outcome, failures));
        }
    }

    /// Starts one attempt: counted, announced, under the call's timeout or
    /// what is left of its deadline.
    fn send<'a>(
        &self,
        call: &'a Call,
        deadline: &Deadline,
        permit: Option<Permit>,
        hedge: bool,
    ) -> Sent<'a> {
        let attempt = call.cancel.begin_attempt();
        let now = now_ms();
        {
            let mut st = self.st.borrow_mut();
            st.stats.attempts += 1;
            if attempt == 1 {
                if let Some(b) = st.budget.as_mut() {
                    b.record_call(now);
                }
            }
        }
        let remaining = deadline.remaining(now);
        self.emit_call("attempt", call, attempt, &|o| {
            o.elapsed_ms = Some(deadline.elapsed(now));
            o.remaining_ms = Some(remaining);
        });
        let (timeout_ms, phase) = if remaining < call.cfg.timeout_ms {
            (remaining, "deadline")
        } else {
            (call.cfg.timeout_ms, "attempt")
        };
        type Attempt<'a> = Pin<Box<dyn Future<Output = (AttemptEnd, Option<Quota>)> + 'a>>;
        let (end, stop): (Attempt<'a>, _) = match Stop::new() {
            Ok(stop) => (
                Box::pin(fetch::attempt(call, timeout_ms, stop.clone(), hedge)),
                Some(stop),
            ),
            Err(e) => (Box::pin(async { (AttemptEnd::Network(e), None) }), None),
        };
        Sent {
            end,
            stop,
            permit,
            phase,
            started: now,
        }
    }

    /// How long after an attempt starts its hedge goes out; None when the
    /// endpoint has no p95 yet (a guess would hedge every call).
    fn hedge_after(&self, call: &Call, h: HedgeConfig) -> Option<f64> {
        match h.after {
            HedgeAfter::Ms(ms) => Some(ms),
            HedgeAfter::P95 => self.st.borrow().latencies.p95(&call.breaker_key, now_ms()),
        }
    }

    /// A hedge, if everything allows one now: a call that may be replayed,
    /// time left, a free slot, a closed breaker, and the retry budget.
    fn hedge<'a>(
        &self,
        call: &'a Call,
        deadline: &Deadline,
        retry: &RetryConfig,
    ) -> Option<Sent<'a>> {
        let now = now_ms();
        if call.cancel.is_cancelled()
            || deadline.expired(now)
            || !method_may_retry(retry, &call.method, call.has_key)
        {
            return None;
        }
        // Never past a hold (Retry-After, a spent quota) or a quota's
        // spacing: a hedge is a send like any other (admitted, it counts).
        let admit =
            self.st
                .borrow_mut()
                .limits
                .admit(&call.breaker_key, now, 0.0, call.cfg.rate_limit);
        if !matches!(admit, Admit::Now) || !self.st.borrow_mut().limiter.try_take() {
            return None;
        }
        let permit = {
            let mut st = self.st.borrow_mut();
            match st.breakers.as_mut() {
                None => Ok(None),
                Some(b) => {
                    if b.state(&call.breaker_key, now) != BreakerState::Closed {
                        Err(None)
                    } else {
                        match b.acquire(&call.breaker_key, now, rand01()) {
                            Ok(Permit::Normal) => Ok(Some(Permit::Normal)),
                            Ok(p) => Err(Some(p)),
                            Err(_) => Err(None),
                        }
                    }
                }
            }
        };
        let permit = match permit {
            Ok(p) => p,
            Err(p) => {
                self.release_slot();
                self.breaker_record(call, p, Sample::Ignored);
                return None;
            }
        };
        let allowed = {
            let mut st = self.st.borrow_mut();
            let allowed = st.budget.as_mut().is_none_or(|b| b.try_retry(now));
            if allowed {
                st.stats.retries += 1;
            } else {
                st.stats.budget_denied += 1;
            }
            allowed
        };
        if !allowed {
            self.release_slot();
            self.breaker_record(call, permit, Sample::Ignored);
            return None;
        }
        Some(self.send(call, deadline, permit, true))
    }
}
