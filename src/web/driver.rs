//! The call loop's I/O: fetch, timers, aborts, events, the probe lock and
//! the online wait, around the policy core's [`Guard`], which takes every
//! decision (see `src/policy/guard.rs` for the steps). Nothing here decides
//! whether to send, retry or stop; it waits, sends, and turns the core's
//! answers into the errors and events users see.

use wasm_bindgen::prelude::*;

mod steps;

use steps::Step;

pub(super) use super::call::Halt;
use super::call::{Call, Prepared};
use super::crosstab::ProbeLock;
use super::engine::Engine;
use super::errors::{CallError, ErrorKind};
use super::fetch::{self, AttemptEnd, Decided};
use super::host::{global_target, is_offline, now_ms, rand01};
use super::runtime::{Apart, EventLink, Gate, Wake};
use crate::policy::breaker::Permit;
use crate::policy::classify::RetryDenied;
use crate::policy::deadline::Deadline;
use crate::policy::guard::{Admission, Attempt, CallState, Phase, Stop, Verdict};
use crate::policy::href::described;
use crate::policy::limiter::Acquire;

/// What a call holding a half-open probe permit does after asking for
/// the cross-tab probe lock (see `probe.rs`).
pub(super) enum Probed {
    /// Send the probe, holding the lock if there is one.
    Go(Option<ProbeLock>),
    /// Another tab's probe decided the key (or a probe permit came back
    /// here): give the permit back and ask again.
    Again,
}

fn circuit_open(call: &Call, retry_in_ms: f64) -> CallError {
    CallError::new(ErrorKind::CircuitOpen {
        key: call.spec.key.clone(),
        retry_in_ms,
    })
}

fn offline_error(denied: Option<RetryDenied>) -> CallError {
    let mut e = CallError::new(ErrorKind::Network {
        cause: JsValue::UNDEFINED,
        offline: true,
    });
    e.retry_denied = denied;
    e
}

impl Engine {
    /// Runs a call to its end: resolves with the value of its last attempt
    /// or rejects with a descriptor of the reason it stopped.
    pub async fn run(&self, call: &Call) -> Result<JsValue, JsValue> {
        // A call whose first attempt was settled before it was shared began then.
        let since = call.since().unwrap_or_else(now_ms);
        let mut c = self.st.borrow_mut().guard.start(&call.spec, since);
        let result = Apart(self.attempts(call, &mut c)).await;
        result.map_err(|e| {
            let attempts = c.attempts();
            let e = e
                .stamped(&call.request_id, attempts, c.deadline.elapsed(now_ms()))
                .about(described(&call.spec.method, &call.url));
            let guard = &mut self.st.borrow_mut().guard;
            guard.retry_unsent(&mut c);
            // A shared network call's callers are counted one by one
            // (`Engine::call`): each ends its own way.
            if !call.mode.is_shared() {
                guard.failed();
            }
            self.events.emit_call("giveUp", call, attempts, &|o| {
                o.times.elapsed_ms = Some(e.elapsed_ms);
                o.outcome.status = e.status();
                o.outcome.error_name = Some(e.name());
            });
            e.to_js()
        })
    }

    async fn attempts(&self, call: &Call, c: &mut CallState<'_>) -> Result<JsValue, CallError> {
        // The error a retry was planned after: if the deadline passes before
        // the retry can start (a timer that fired late), the call ends with
        // it, as the planner would have, not with a bare TimeoutError.
        let mut last: Option<CallError> = None;
        loop {
            // The probe lock, if any, is held until the round ends.
            let (sent, _probe_lock, prepared) = match Apart(self.admitted(call, c)).await {
                Ok(sent) => sent,
                Err(Halt::Error(e)) => return Err(e),
                Err(Halt::OutOfTime) => {
                    return Err(match last {
                        Some(e) => e.denied(RetryDenied::Deadline),
                        None => CallError::new(ErrorKind::Timeout {
                            phase: Phase::Deadline,
                        }),
                    })
                }
            };
            let Decided { end, send, quota } = Apart(self.round(call, c, sent, &prepared)).await;
            let end = match Apart(self.after_401(call, c, end, &send, quota.as_ref())).await {
                Step::Settle(end) => end,
                Step::Replay => continue,
                Step::Done(done) => return done,
            };
            let offline = matches!(end, AttemptEnd::Network(_)) && is_offline();
            if let AttemptEnd::Timeout(_) = end {
                self.events.emit_call("timeout", call, send.attempt, &|o| {
                    o.times.elapsed_ms = Some(c.deadline.elapsed(now_ms()));
                });
            }
            let (verdict, asked) =
                Apart(self.settle_end(call, c, (&end, offline), &send, quota.as_ref())).await;
            let (err, response) = match end.into_result(&call.cancel, offline) {
                Ok(v) => return Ok(v),
                Err(failed) => failed,
            };
            if let Err(e) = asked {
                if let Some(r) = &response {
                    fetch::discard(r);
                }
                return Err(e);
            }
            let verdict =
                Apart(self.before_retry(call, c, verdict, (&err, &response), send.attempt)).await?;
            let delay = match verdict {
                Verdict::Retry { delay_ms } => delay_ms,
                Verdict::End => return Err(err),
                Verdict::Fail { denied } => {
                    // fetch() resolves with the final Response whatever its status.
                    return match response {
                        Some(resp) if call.mode.is_fetch() => Ok(resp),
                        _ => Err(err.denied(denied)),
                    };
                }
            };
            if let Some(resp) = &response {
                fetch::discard(resp);
            }
            self.events.emit_call("retry", call, send.attempt, &|o| {
                o.times.delay_ms = Some(delay);
                o.outcome.status = err.status();
                o.outcome.error_name = Some(err.name());
            });
            // fetch() resolves with a final Response, never rejects with an
            // HttpError: its deadline stays a TimeoutError.
            let http_from_fetch = call.mode.is_fetch() && response.is_some();
            last = (!http_from_fetch).then_some(err);
            if call.cancel.sleep(delay).await == Wake::Cancelled {
                return Err(call.cancel.abort_error());
            }
        }
    }

    /// Settles what the attempt sends (the client's header functions,
    /// token and beforeRequest hooks, holding nothing: `Engine::prepare`),
    /// whose credentials the holds it obeys are those of, waits until the
    /// policy core lets the call send, then takes its probe lock (a
    /// half-open probe, across tabs: held until the attempt ends) and a
    /// concurrency slot: the attempt to send, and what it sends.
    async fn admitted(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
    ) -> Result<(Attempt, Option<ProbeLock>, Prepared), Halt> {
        let prepared = match call.take_first() {
            Some(first) => first?,
            None => Apart(self.prepare(call, &c.deadline, c.attempts() + 1)).await?,
        };
        Engine::judge(call, c, &prepared);
        let (permit, probe_lock) = self.admission(call, c).await?;
        if let Err(e) = self.acquire_slot(call, &c.deadline).await {
            self.give_back(call, c, permit);
            return Err(e.into());
        }
        // A slot (or a lock) that came right at the deadline: no attempt
        // with nothing left to run in.
        match self.decide(&call.request_id, |g| g.begin(c, permit, now_ms())) {
            Some(send) => Ok((send, probe_lock, prepared)),
            None => {
                self.release_slot();
                Err(Halt::OutOfTime)
            }
        }
    }

    /// The call admitted with `permit` makes no attempt after all.
    fn give_back(&self, call: &Call, c: &CallState<'_>, permit: Option<Permit>) {
        self.decide(&call.request_id, |g| g.abandon(c, permit, now_ms()));
    }

    /// Asks the policy core until it lets the call go (with its breaker
    /// permit, and the probe lock a half-open probe holds), waiting as it
    /// says: for the host to come online, out a hold, or for a half-open
    /// probe's outcome (here or in another tab).
    async fn admission(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
    ) -> Result<(Option<Permit>, Option<ProbeLock>), Halt> {
        loop {
            if call.cancel.is_cancelled() {
                return Err(call.cancel.abort_error().into());
            }
            let admission = self.decide(&call.request_id, |g| {
                g.admit(c, now_ms(), is_offline(), rand01())
            });
            // Every wait but the probe lock's is one wait on a gate here:
            // what opens it is set up first (an `online` listener, the
            // probe's queue), and undone after.
            let (gate, ms, online, probe) = match admission {
                Admission::Go(permit) => {
                    match Apart(self.probe_lock(call, c, permit)).await {
                        Ok(Probed::Go(lock)) => return Ok((permit, lock)),
                        // Another tab's probe decided: give the permit back, ask again.
                        Ok(Probed::Again) => self.give_back(call, c, permit),
                        Err(halt) => {
                            self.give_back(call, c, permit);
                            return Err(halt);
                        }
                    }
                    continue;
                }
                // While the host is offline no attempt is made: the call
                // waits for the `online` event within its deadline (where
                // the host has no event target to listen on, it fails at
                // once with an offline NetworkError).
                Admission::Online => {
                    let Some(target) = global_target() else {
                        return Err(offline_error(None).into());
                    };
                    let gate = Gate::new();
                    let g = gate.clone();
                    let link = EventLink::once(&target, "online", move || g.open(Wake::Done));
                    let ms = c.deadline.remaining(now_ms());
                    (gate, ms, Some(link), None)
                }
                Admission::Wait { ms, why, announce } => {
                    if announce {
                        self.events.emit_call("wait", call, c.attempts() + 1, &|o| {
                            o.times.delay_ms = Some(ms);
                            o.outcome.reason = Some(why.as_str());
                            o.breaker.key = Some(&call.spec.key);
                        });
                    }
                    (Gate::new(), ms, None, None)
                }
                // Held while the key's probe is out: until its outcome
                // releases the call, within the deadline.
                Admission::AwaitProbe(id) => {
                    let gate = Gate::new();
                    self.park_probe_wait(id, gate.clone());
                    (gate, c.deadline.remaining(now_ms()), None, Some(id))
                }
                Admission::Stop(Stop::Deadline) => return Err(Halt::OutOfTime),
                Admission::Stop(Stop::Offline) => return Err(offline_error(None).into()),
                Admission::Stop(Stop::CircuitOpen { retry_in_ms }) => {
                    return Err(circuit_open(call, retry_in_ms).into())
                }
            };
            let wake = call.cancel.wait_on(&gate, ms).await;
            if let (Some(id), Wake::Timer | Wake::Cancelled) = (probe, wake) {
                self.unpark_probe_wait(c, id);
            }
            match wake {
                Wake::Cancelled => return Err(call.cancel.abort_error().into()),
                Wake::Timer if online.is_some() => {
                    return Err(offline_error(Some(RetryDenied::Deadline)).into())
                }
                Wake::Timer if probe.is_some() => return Err(Halt::OutOfTime),
                _ => {}
            }
        }
    }

    /// Takes a concurrency slot, waiting FIFO if need be. The wait ends at
    /// the deadline or when the call is cancelled.
    async fn acquire_slot(&self, call: &Call, deadline: &Deadline) -> Result<(), CallError> {
        let acquired = self.st.borrow_mut().guard.acquire_slot();
        let id = match acquired {
            Acquire::Granted => return Ok(()),
            Acquire::Full => return Err(CallError::new(ErrorKind::QueueFull)),
            Acquire::Queued(id) => id,
        };
        let gate = Gate::new();
        self.park(id, gate.clone());
        let wake = call
            .cancel
            .wait_on(&gate, deadline.remaining(now_ms()))
            .await;
        if self.unpark(id, wake == Wake::Granted) {
            // The slot reached us as we gave up: pass it on.
            self.release_slot();
        }
        match wake {
            Wake::Granted => Ok(()),
            Wake::Timer => Err(CallError::new(ErrorKind::Timeout {
                phase: Phase::Queue,
            })),
            _ => Err(call.cancel.abort_error()),
        }
    }
}
