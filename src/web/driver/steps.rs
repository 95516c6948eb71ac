//! The steps a client's hooks and auth add to the call loop, at fixed
//! points of it: before admission, its header functions, token and
//! beforeRequest hooks; after a
//! retry is planned, the `beforeRetry` hooks (and before an attempt is
//! settled, `retry.retryOn`); after a 401 to an attempt
//! that carried a token, the shared refresh. What each
//! may change is the policy core's to decide (`Guard::veto_retry`,
//! `Guard::replay`); here the client's `UserFns` (`hooks.rs`) is only asked,
//! within the call's deadline and until it is cancelled.

use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::{Drive, Halt};
use crate::policy::classify::RetryDenied;
use crate::policy::credentials::Credentials;
use crate::policy::deadline::Deadline;
use crate::policy::guard::{Attempt, Verdict};
use crate::policy::ratelimit::Quota;
use crate::text::{cat, decimal};
use crate::web::call::{credentials_of, Call, Mode, Prepared};
use crate::web::engine::Engine;
use crate::web::errors::{CallError, ErrorKind};
use crate::web::fetch::{self, AttemptEnd};
use crate::web::hooks::flag;
use crate::web::host::{epoch_ms, now_ms, rand01};
use crate::web::runtime::{settle, Apart, Wake};

/// What the loop does with an attempt's end after [`Drive::after_401`].
pub(super) enum Step {
    /// Settle it as usual.
    Settle(AttemptEnd),
    /// Send the call once more (its token refreshed): back to admission.
    Replay,
    /// The call ends so.
    Done(Result<JsValue, CallError>),
}

/// Before each attempt's admission (README, "Hooks"):
/// the Request it sends, with what the client's header functions and
/// token give, through its beforeRequest hooks (`UserFns::prepare`), within
/// the deadline and until the call is cancelled, holding no slot: a
/// hook may call the same client. The attempt sends that Request as it
/// is (never read again), and its admission judges it: the holds and
/// quotas it obeys and sets are those of its credentials as sent
/// (README, "Server clients"), a refreshed token's after a 401's replay, and its
/// Idempotency-Key as sent decides whether it may be replayed
/// (`CallState::key_sent`). A client without an `UserFns` that makes a
/// Request sends the call's own: its headers say whom it speaks for. A
/// function that fails ends the call (nothing sent, no sample).
///
/// A call aborted already (its signal was when it was made, or aborted
/// while it waited for the engine or between attempts) ends here, first,
/// with its AbortError, as the host's fetch ends one: no function of its
/// client's is run for it (`within` below would notice the abort only once
/// they had been called).
pub(super) async fn prepare(
    call: &Call,
    deadline: &Deadline,
    attempt: u32,
) -> Result<Prepared, Halt> {
    if call.cancel.is_cancelled() {
        return Err(call.cancel.abort_error().into());
    }
    let Some(fns) = call.layer().fns(flag::PER_ATTEMPT) else {
        return Ok(Prepared(JsValue::UNDEFINED));
    };
    let (input, init) = call.target.parts();
    let asked = settle(fns.prepare(&input, &init, call.own(), &call.context(attempt)));
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
/// ([`prepare`]: within its deadline, which begins now,
/// abortable, cancelled by `close()`) and kept for that attempt, `key`
/// with the credentials it sends. None when that ended the call (which
/// then ends unshared, counted as a call of its own), or its client is
/// closed.
pub(super) async fn shared_key(
    engine: &Engine,
    call: &mut Call,
    key: String,
    signal: Option<&AbortSignal>,
) -> Option<String> {
    if call.layer().fns(flag::MAY_AUTHORIZE).is_none() {
        return Some(key);
    }
    let id = engine.enter(call.layer(), &call.cancel)?;
    let since = now_ms();
    let link = call.cancel.follow(signal);
    let deadline = Deadline::new(since, call.spec.cfg.deadline_ms);
    let first = Apart(prepare(call, &deadline, 1)).await;
    drop(link);
    engine.leave(id);
    let key = match &first {
        Ok(p) => Some(match who(call, p).digest() {
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
fn who(call: &Call, prepared: &Prepared) -> Credentials {
    match prepared.request() {
        Some(r) => credentials_of(&r.headers()),
        None => call.target.credentials(),
    }
}

impl Drive<'_> {
    /// What admission judges of the attempt that sends `prepared`: its
    /// credentials, and (a Request the client's `UserFns` made, which its
    /// hooks may have rebuilt) its Idempotency-Key as sent.
    pub(super) fn judge(&mut self, prepared: &Prepared) {
        self.c.set_credentials(who(self.call, prepared));
        if let Some(r) = prepared.request() {
            self.c
                .key_sent(r.headers().get("Idempotency-Key").ok().flatten().as_deref());
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
        &mut self,
        (end, offline): (&AttemptEnd, bool),
        send: &Attempt,
        quota: Option<&Quota>,
    ) -> (Verdict, Result<(), CallError>) {
        let (engine, call) = (self.engine, self.call);
        let mut asked = Ok(());
        if let Some((fns, f)) = call.retry_on() {
            let asks = engine
                .guard()
                .asks_predicate(&self.c, &end.as_ended(offline));
            if let Some(error) = end.error(&call.cancel, offline).filter(|_| asks) {
                let said = fns.retry_on(&f, &error.to_js(), &call.context(send.attempt));
                let ms = self.c.deadline.remaining(now_ms());
                match call.cancel.within(ms, settle(said)).await {
                    Ok(Ok(said)) => self.c.predicate_said(said.as_bool()),
                    Ok(Err(e)) => asked = Err(CallError::new(ErrorKind::Thrown(e))),
                    Err(Wake::Cancelled) => asked = Err(call.cancel.abort_error()),
                    Err(_) => {}
                }
            }
        }
        let verdict = self.decide(|g, c| {
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
        &mut self,
        verdict: Verdict,
        (err, response): (&CallError, &Option<JsValue>),
        attempt: u32,
    ) -> Result<Verdict, CallError> {
        let call = self.call;
        let (Verdict::Retry { delay_ms }, Some(fns)) =
            (verdict, call.layer().fns(flag::BEFORE_RETRY))
        else {
            return Ok(verdict);
        };
        let now = now_ms();
        let error = err.to_js();
        let asked = settle(fns.retry(&error, delay_ms, &call.context(attempt)));
        let answer = call
            .cancel
            .within(self.c.deadline.remaining(now), asked)
            .await;
        if let Ok(Ok(go)) = &answer {
            if go.as_bool() != Some(false) {
                return Ok(verdict);
            }
        }
        let vetoed = self.decide(|g, c| g.veto_retry(c));
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
        &mut self,
        end: AttemptEnd,
        send: &Attempt,
        quota: Option<&Quota>,
    ) -> Step {
        let call = self.call;
        let (Some(seen), Some(fns)) = (end.unauthorized(), call.layer().fns(flag::REFRESH)) else {
            return Step::Settle(end);
        };
        let replay = self.decide(|g, c| g.replay(c, send.permit, quota, now_ms()));
        if !replay {
            return Step::Settle(end);
        }
        let remaining = self.c.deadline.remaining(now_ms());
        let wait = settle(fns.refreshed(seen, remaining));
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
