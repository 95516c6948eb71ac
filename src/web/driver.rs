//! The call loop's I/O: fetch, timers, aborts, events, the probe lock and
//! the online wait, around the policy core's [`Guard`], which takes every
//! decision (see `src/policy/guard.rs` for the steps). Nothing here decides
//! whether to send, retry or stop; it waits, sends, and turns the core's
//! answers into the errors and events users see.
//!
//! A call is driven by a [`Drive`]: its engine, the call and its state in
//! the policy core, which every step of the loop reads. The steps live
//! beside it: `admission.rs` (admission and its waits: the online wait,
//! holds, the half-open hold, a concurrency slot, and a `CrossProbe`, the
//! tabs' probe lock a half-open probe takes), `round.rs` (a `Round` of
//! attempts: the attempt and its hedges in flight), `adopt.rs` (a first
//! attempt the boot build sent before the engine was in) and `steps.rs`
//! (the client's hooks, auth and `retry.retryOn`).
//!
//! [`Guard`]: crate::policy::guard::Guard

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

mod admission;
mod adopt;
mod round;
mod steps;

use steps::prepare;
use steps::Step;

pub(super) use super::call::Halt;
use super::call::{Call, Mode, Prepared, ResponseType};
use super::cancel::CancelReason;
use super::crosstab::ProbeLock;
use super::dedupe::{Flight, Lead, Waiter};
use super::engine::Engine;
use super::errors::CallError;
use super::fetch::{self, AttemptEnd, Decided};
use super::host::{is_offline, now_ms};
use super::runtime::{Apart, Wake};
use crate::policy::breaker::Permit;
use crate::policy::guard::{Attempt, CallState, Guard, Verdict};
use crate::policy::href::described;

/// Runs a call to its end as its caller sees it: refused once the
/// client is closed, cancelled by the caller's signal and by `close()`,
/// and sharing the network call of an identical GET already in flight.
pub async fn call(
    engine: Rc<Engine>,
    call: Call,
    signal: Option<AbortSignal>,
) -> Result<JsValue, JsValue> {
    let mut call = call;
    // A closed client shares nothing: run_linked refuses the call.
    let key = match &call.mode {
        Mode::Request {
            share: Some(key), ..
        } if !engine.is_closed() => Some(key.clone()),
        _ => None,
    };
    let key = match key {
        Some(key) => Apart(steps::shared_key(&engine, &mut call, key, signal.as_ref())).await,
        None => None,
    };
    let Some(key) = key else {
        return Apart(run_linked(engine, call, signal)).await;
    };
    // A shared call's attempts, for what its caller checks afterwards.
    let mine = call.cancel.clone();
    let mut me = Waiter {
        request_id: call.request_id.clone(),
        started_ms: call.since().unwrap_or_else(now_ms),
        deadline_ms: None,
        about: described(&call.spec.method, &call.url),
    };
    // A cancelled flight (its last caller aborted) is ending: a new
    // caller starts a flight of its own instead of inheriting the abort.
    if let Some(f) = engine.flight(&key) {
        engine.joined();
        // A joiner's own deadline still holds; the first caller's is
        // the network call's.
        me.deadline_ms = Some(call.spec.cfg.deadline_ms);
        let seat = f.seat();
        let attempts = f.cancel.clone();
        let out = Apart(f.join(seat, signal, me)).await;
        mine.begin_attempt(attempts.attempts());
        return caller_done(&engine, out);
    }
    let copy_response = call.mode.response_type() == Some(ResponseType::Response);
    let flight = Rc::new(Flight::new(copy_response));
    engine.add_flight(key.clone(), flight.clone());
    let (e, f) = (engine.clone(), flight.clone());
    let network = Box::pin(async move {
        let mut call = call;
        call.cancel = f.cancel.clone();
        let outcome = Apart(run_linked(e.clone(), call, None)).await;
        e.end_flight(&key, &f);
        outcome
    });
    let seat = flight.seat();
    let attempts = flight.cancel.clone();
    let out = Lead {
        network: Some(network),
        join: Box::pin(flight.clone().join(seat.clone(), signal, me)),
        flight,
        seat,
        answer: None,
    }
    .await;
    mine.begin_attempt(attempts.attempts());
    caller_done(&engine, out)
}

/// What a caller of a shared network call got: each caller is a call
/// of its own in `stats().failures` (one may abort while the others
/// get the answer, or all get the same error).
fn caller_done(engine: &Engine, out: Result<JsValue, JsValue>) -> Result<JsValue, JsValue> {
    if out.is_err() {
        engine.failed();
    }
    out
}

async fn run_linked(
    engine: Rc<Engine>,
    call: Call,
    signal: Option<AbortSignal>,
) -> Result<JsValue, JsValue> {
    let Some(id) = engine.enter(call.layer(), &call.cancel) else {
        call.cancel.cancel(CancelReason::Closed);
        return Err(call.cancel.abort_error().to_js());
    };
    let _link = call.cancel.follow(signal.as_ref());
    let result = Apart(Drive::run(&engine, &call)).await;
    engine.leave(id);
    result
}

/// One call as the loop drives it: its engine, the call, and its state in
/// the policy core.
pub(super) struct Drive<'a> {
    engine: &'a Engine,
    call: &'a Call,
    c: CallState<'a>,
}

impl<'a> Drive<'a> {
    /// Runs a call to its end: resolves with the value of its last attempt
    /// or rejects with a descriptor of the reason it stopped.
    async fn run(engine: &'a Engine, call: &'a Call) -> Result<JsValue, JsValue> {
        // A call whose first attempt was settled before it was shared began then.
        let since = call.since().unwrap_or_else(now_ms);
        let c = engine.start(&call.spec, since);
        let mut d = Drive { engine, call, c };
        let result = Apart(d.attempts()).await;
        let Drive { mut c, .. } = d;
        result.map_err(|e| {
            let attempts = c.attempts();
            let e = e
                .stamped(&call.request_id, attempts, c.deadline.elapsed(now_ms()))
                .about(described(&call.spec.method, &call.url));
            engine.retry_unsent(&mut c);
            // A shared network call's callers are counted one by one
            // (`driver::call`): each ends its own way.
            if !call.mode.is_shared() {
                engine.failed();
            }
            engine.events().emit_call("giveUp", call, attempts, &|o| {
                o.times.elapsed_ms = Some(e.elapsed_ms);
                o.outcome.status = e.status();
                o.outcome.error_name = Some(e.name());
            });
            e.to_js()
        })
    }

    /// Asks the policy core about this call ([`Engine::decide`]).
    fn decide<R>(&mut self, ask: impl FnOnce(&mut Guard, &mut CallState<'a>) -> R) -> R {
        let c = &mut self.c;
        self.engine.decide(&self.call.request_id, |g| ask(g, c))
    }

    async fn attempts(&mut self) -> Result<JsValue, CallError> {
        let call = self.call;
        // The error a retry was planned after: if the deadline passes before
        // the retry can start (a timer that fired late), the call ends with
        // it, as the planner would have, not with a bare TimeoutError.
        let mut last: Option<CallError> = None;
        // fetch(): the Response a denied retry was planned after ([`Drive::kept`]).
        let mut kept: Option<JsValue> = None;
        loop {
            // The probe lock, if any, is held until the round ends.
            let round = Apart(self.next_round()).await;
            if let Some(resp) = kept_if_denied(kept.take(), &round) {
                return Ok(resp);
            }
            let (Decided { end, send, quota }, _probe_lock) = match round {
                Ok(round) => round,
                Err(Halt::Error(e)) => return Err(e),
                Err(halt) => return Err(halt.ended(last)),
            };
            let end = match Apart(self.after_401(end, &send, quota.as_ref())).await {
                Step::Settle(end) => end,
                Step::Replay => continue,
                Step::Done(done) => return done,
            };
            let offline = matches!(end, AttemptEnd::Network(_)) && is_offline();
            if let AttemptEnd::Timeout(_) = end {
                let c = &self.c;
                self.engine
                    .events()
                    .emit_call("timeout", call, send.attempt, &|o| {
                        o.times.elapsed_ms = Some(c.deadline.elapsed(now_ms()));
                    });
            }
            let (verdict, asked) =
                Apart(self.settle_end((&end, offline), &send, quota.as_ref())).await;
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
                Apart(self.before_retry(verdict, (&err, &response), send.attempt)).await?;
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
            // fetch() resolves with a final Response, never rejects with an
            // HttpError: its deadline stays a TimeoutError.
            let http_from_fetch = call.mode.is_fetch() && response.is_some();
            kept = self.kept(response);
            self.engine
                .events()
                .emit_call("retry", call, send.attempt, &|o| {
                    o.times.delay_ms = Some(delay);
                    o.outcome.status = err.status();
                    o.outcome.error_name = Some(err.name());
                });
            last = (!http_from_fetch).then_some(err);
            if call.cancel.sleep(delay).await == Wake::Cancelled {
                kept.take().inspect(fetch::discard);
                return Err(call.cancel.abort_error());
            }
        }
    }

    /// fetch(): the Response a retry the budget denied was planned after,
    /// kept while that retry waits with its origin's burst: if the denial
    /// stands after all (`Stop::Budget`), the call resolves with it, as it
    /// would have at once. Any other is discarded.
    fn kept(&self, response: Option<JsValue>) -> Option<JsValue> {
        let resp = response?;
        if self.call.mode.is_fetch() && self.c.unbudgeted() {
            return Some(resp);
        }
        fetch::discard(&resp);
        None
    }

    /// Settles what the attempt sends (the client's header functions,
    /// token and beforeRequest hooks, holding nothing: [`prepare`]),
    /// whose credentials the holds it obeys are those of, waits until the
    /// policy core lets the call send, then takes its probe lock (a
    /// half-open probe, across tabs: held until the attempt ends) and a
    /// concurrency slot: the attempt to send, and what it sends.
    async fn admitted(&mut self) -> Result<(Attempt, Option<ProbeLock>, Prepared), Halt> {
        let call = self.call;
        let prepared = match call.take_first() {
            Some(first) => first?,
            None => Apart(prepare(call, &self.c.deadline, self.c.attempts() + 1)).await?,
        };
        self.judge(&prepared);
        let (permit, probe_lock) = self.admission().await?;
        if let Err(e) = self.acquire_slot().await {
            self.give_back(permit);
            return Err(e.into());
        }
        // A slot (or a lock) that came right at the deadline: no attempt
        // with nothing left to run in.
        match self.decide(|g, c| g.begin(c, permit, now_ms())) {
            Some(send) => Ok((send, probe_lock, prepared)),
            None => {
                self.engine.release_slot();
                Err(Halt::OutOfTime)
            }
        }
    }

    /// The call admitted with `permit` makes no attempt after all.
    fn give_back(&mut self, permit: Option<Permit>) {
        self.decide(|g, c| g.abandon(c, permit, now_ms()));
    }
}

/// The Response [`Drive::kept`] kept, if the retry's denial stood; else it
/// is discarded.
fn kept_if_denied<T>(kept: Option<JsValue>, admitted: &Result<T, Halt>) -> Option<JsValue> {
    let resp = kept?;
    if matches!(admitted, Err(Halt::Denied)) {
        return Some(resp);
    }
    fetch::discard(&resp);
    None
}
