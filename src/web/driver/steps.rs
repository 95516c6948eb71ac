//! The steps a client's hooks and auth add to the call loop, at fixed
//! points of it: before admission, its header functions, token and
//! beforeRequest hooks; after a
//! retry is planned, the `beforeRetry` hooks (and before an attempt is
//! settled, `retry.retryOn`); after a 401 to an attempt
//! that carried a token, the shared refresh. What each
//! may change is the policy core's to decide (`Guard::veto_retry`,
//! `Guard::replay`); here the client's `Io` (`hooks.rs`) is only asked,
//! within the call's deadline and until it is cancelled.

use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::super::call::{credentials_of, Call, Mode, Prepared};
use super::super::engine::Engine;
use super::super::errors::{CallError, ErrorKind};
use super::super::fetch::{self, AttemptEnd};
use super::super::hooks::flag;
use super::super::host::{epoch_ms, now_ms, rand01};
use super::super::runtime::{settle, Apart, Wake};
use super::Halt;
use crate::policy::classify::RetryDenied;
use crate::policy::credentials::Credentials;
use crate::policy::deadline::Deadline;
use crate::policy::guard::{Attempt, CallState, Verdict};
use crate::policy::ratelimit::Quota;
use crate::text::{cat, decimal};

/// What the loop does with an attempt's end after [`Engine::after_401`].
pub(super) enum Step {
    /// Settle it as usual.
    Settle(AttemptEnd),
    /// Send the call once more (its token refreshed): back to admission.
    Replay,
    /// The call ends so.
    Done(Result<JsValue, CallError>),
}

impl Engine {
    /// Before each attempt's admission (README, "Hooks"):
    /// the Request it sends, with what the client's header functions and
    /// token give, through its beforeRequest hooks (`Io::prepare`), within
    /// the deadline and until the call is cancelled, holding no slot: a
    /// hook may call the same client. The attempt sends that Request as it
    /// is (never read again), and its admission judges it: the holds and
    /// quotas it obeys and sets are those of its credentials as sent
    /// (README, "Server clients"), a refreshed token's after a 401's replay, and its
    /// Idempotency-Key as sent decides whether it may be replayed
    /// (`CallState::key_sent`). A client without an `Io` that makes a
    /// Request sends the call's own: its headers say whom it speaks for. A
    /// function that fails ends the call (nothing sent, no sample).
    pub(in super::super) async fn prepare(
        &self,
        call: &Call,
        deadline: &Deadline,
        attempt: u32,
    ) -> Result<Prepared, Halt> {
        let Some(io) = call.layer().io(flag::PER_ATTEMPT) else {
            return Ok(Prepared(JsValue::UNDEFINED));
        };
        let (input, init) = call.target.parts();
        let asked = settle(io.prepare(&input, &init, call.own(), &call.context(attempt)));
        match call
            .cancel
            .within(deadline.remaining(now_ms()), asked)
            .await
        {
            Ok(Ok(pre)) => Ok(Prepared(pre)),
            Ok(Err(e)) => Err(CallError::new(ErrorKind::Thrown(e)).into()),
            Err(Wake::Cancelled) => Err(call.cancel.abort_error().into()),
            Err(_) => Err(Halt::OutOfTime),
        }
    }

    /// The key under which a call shares a network call (`key`: what
    /// makes calls identical), when its client's header functions, token
    /// or beforeRequest hooks may add credentials (README, "dedupe":
    /// never across credentials): its first attempt's Request settled now
    /// (`Engine::prepare`: within its deadline, which begins now,
    /// abortable, cancelled by `close()`) and kept for that attempt, `key`
    /// with the credentials it sends. None when that ended the call (which
    /// then ends unshared, counted as a call of its own), or its client is
    /// closed.
    pub(in super::super) async fn shared_key(
        &self,
        call: &mut Call,
        key: String,
        signal: Option<&AbortSignal>,
    ) -> Option<String> {
        if call.layer().io(flag::MAY_AUTHORIZE).is_none() {
            return Some(key);
        }
        let id = self.enter(call.layer(), &call.cancel)?;
        let since = now_ms();
        let link = call.cancel.follow(signal);
        let deadline = Deadline::new(since, call.spec.cfg.deadline_ms);
        let first = Apart(self.prepare(call, &deadline, 1)).await;
        drop(link);
        self.leave(id);
        let key = match &first {
            Ok(p) => Some(match Engine::who(call, p).digest() {
                Some(d) => cat(&[&key, "\ncredentials:", &decimal(d)]),
                None => key,
            }),
            Err(_) => {
                if let Mode::Request { share, .. } = &mut call.mode {
                    *share = None;
                }
                None
            }
        };
        call.set_first(since, first);
        key
    }

    /// Whom the attempt that sends `prepared` speaks for: the credential
    /// headers of its Request as sent (the call's own target's without
    /// one).
    pub(in super::super) fn who(call: &Call, prepared: &Prepared) -> Credentials {
        match prepared.request() {
            Some(r) => credentials_of(&r.headers()),
            None => call.target.credentials(),
        }
    }

    /// What admission judges of the attempt that sends `prepared`: its
    /// credentials, and (a Request the client's `Io` made, which its
    /// hooks may have rebuilt) its Idempotency-Key as sent.
    pub(super) fn judge(call: &Call, c: &mut CallState<'_>, prepared: &Prepared) {
        c.set_credentials(Engine::who(call, prepared));
        if let Some(r) = prepared.request() {
            c.key_sent(r.headers().get("Idempotency-Key").ok().flatten().as_deref());
        }
    }

    /// Settles `end` (of attempt `send`) in the policy core
    /// (`Guard::settle`), first asking the call's `retry.retryOn` when the
    /// core asks it (`Guard::asks_predicate`: a failure a retry could
    /// follow), within the deadline and until the call is cancelled. Its
    /// answer is the core's to weigh (`CallState::predicate_said`); one the
    /// deadline came before says nothing (the deadline then denies the
    /// retry). The verdict, and `Err` when the call ends with that instead
    /// (the function threw, an abort): the attempt is settled all the same.
    pub(super) async fn settle_end(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
        (end, offline): (&AttemptEnd, bool),
        send: &Attempt,
        quota: Option<&Quota>,
    ) -> (Verdict, Result<(), CallError>) {
        let mut asked = Ok(());
        if let Some((io, f)) = call.retry_on() {
            let asks = self
                .st
                .borrow()
                .guard
                .asks_predicate(c, &end.as_ended(offline));
            if let Some(error) = end.error(&call.cancel, offline).filter(|_| asks) {
                let said = io.retry_on(&f, &error.to_js(), &call.context(send.attempt));
                let ms = c.deadline.remaining(now_ms());
                match call.cancel.within(ms, settle(said)).await {
                    Ok(Ok(said)) => c.predicate_said(said.as_bool()),
                    Ok(Err(e)) => asked = Err(CallError::new(ErrorKind::Thrown(e))),
                    Err(Wake::Cancelled) => asked = Err(call.cancel.abort_error()),
                    Err(_) => {}
                }
            }
        }
        let verdict = self.decide(&call.request_id, |g| {
            let now = now_ms();
            let ended = end.as_ended(offline);
            g.settle(c, send.permit, &ended, quota, now, epoch_ms(), rand01())
        });
        (verdict, asked)
    }

    /// When `verdict` is a retry planned after `err` (of attempt
    /// `attempt`, with its Response if any): the client's `beforeRetry`
    /// hooks may stop it (the verdict becomes a failure, `retryDenied:
    /// 'hook'`). `Err`: the call ends with that instead (a hook that threw,
    /// an abort), the retry not made.
    pub(super) async fn before_retry(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
        verdict: Verdict,
        (err, response): (&CallError, &Option<JsValue>),
        attempt: u32,
    ) -> Result<Verdict, CallError> {
        let (Verdict::Retry { delay_ms }, Some(io)) =
            (verdict, call.layer().io(flag::BEFORE_RETRY))
        else {
            return Ok(verdict);
        };
        let now = now_ms();
        let error = err.to_js();
        let asked = settle(io.retry(&error, delay_ms, &call.context(attempt)));
        let answer = call.cancel.within(c.deadline.remaining(now), asked).await;
        if let Ok(Ok(go)) = &answer {
            if go.as_bool() != Some(false) {
                return Ok(verdict);
            }
        }
        let vetoed = self.decide(&call.request_id, |g| g.veto_retry(c));
        if let Some(r) = response {
            if !matches!(answer, Ok(Ok(_))) {
                fetch::discard(r);
            }
        }
        match answer {
            Ok(Ok(_)) => Ok(vetoed),
            Ok(Err(e)) => Err(CallError::new(ErrorKind::Thrown(e))),
            Err(Wake::Cancelled) => Err(call.cancel.abort_error()),
            // The deadline passed while the hooks ran: no time to retry.
            Err(_) => Ok(Verdict::Fail {
                denied: RetryDenied::Deadline,
            }),
        }
    }

    /// A 401 to an attempt that carried the client's token, when the
    /// client can refresh it and the policy core allows a replay
    /// (`Guard::replay`): waits for the one refresh of the token it sent,
    /// shared by the client and its derived clients (none if one finished
    /// since the token was read), within the deadline; a refresh it starts
    /// is bounded by that deadline. A refresh that throws ends the call with the 401
    /// (`cause` what it threw); `fetch()` resolves with the 401 Response.
    pub(super) async fn after_401(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
        end: AttemptEnd,
        send: &Attempt,
        quota: Option<&Quota>,
    ) -> Step {
        let (Some(seen), Some(io)) = (end.unauthorized(), call.layer().io(flag::REFRESH)) else {
            return Step::Settle(end);
        };
        let replay = self.decide(&call.request_id, |g| {
            g.replay(c, send.permit, quota, now_ms())
        });
        if !replay {
            return Step::Settle(end);
        }
        let remaining = c.deadline.remaining(now_ms());
        let wait = settle(io.refreshed(seen, remaining));
        let refreshed = call.cancel.within(remaining, wait).await;
        let (err, response) = match end.into_result(&call.cancel, false) {
            Ok(v) => return Step::Done(Ok(v)),
            Err(failed) => failed,
        };
        let (err, cause) = match refreshed {
            Ok(Ok(_)) => {
                if let Some(r) = &response {
                    fetch::discard(r);
                }
                return Step::Replay;
            }
            Err(Wake::Cancelled) => return Step::Done(Err(call.cancel.abort_error())),
            Ok(Err(cause)) => (err.denied(RetryDenied::Status), Some(cause)),
            Err(_) => (err.denied(RetryDenied::Deadline), None),
        };
        Step::Done(match response {
            Some(r) if call.mode.is_fetch() => Ok(r),
            _ => Err(match cause {
                Some(cause) => err.with_cause(cause),
                None => err,
            }),
        })
    }
}
