//! The steps a client's hooks and auth add to the call loop, at fixed
//! points of it: before admission, its header functions and token; after a
//! retry is planned, the `beforeRetry` hooks; after a 401 to an attempt
//! that carried a token, the shared refresh. What each
//! may change is the policy core's to decide (`Guard::veto_retry`,
//! `Guard::replay`); here the client's `Io` (`hooks.rs`) is only asked,
//! within the call's deadline and until it is cancelled.

use wasm_bindgen::{JsCast, JsValue};

use super::super::call::{credentials_of, Call};
use super::super::convert::get;
use super::super::engine::Engine;
use super::super::errors::{CallError, ErrorKind};
use super::super::fetch::{self, AttemptEnd};
use super::super::hooks::flag;
use super::super::host::now_ms;
use super::super::runtime::{settle, Wake};
use super::Halt;
use crate::policy::classify::RetryDenied;
use crate::policy::guard::{Attempt, CallState, Verdict};
use crate::policy::ratelimit::Quota;

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
    /// Before each attempt's admission: what the client's header functions
    /// and token give it (`Io::read`, within the deadline and until the
    /// call is cancelled; sent as read, never read again for the attempt),
    /// and the call's credentials from its headers as they will be sent,
    /// so the holds and quotas it obeys and sets are its user's (API.md,
    /// "Holds"), a refreshed token's after a 401's replay. Undefined for a
    /// client without such functions: the call's own headers say whom it
    /// speaks for. A function that fails ends the call (nothing sent, no
    /// sample).
    pub(super) async fn read(&self, call: &Call, c: &mut CallState<'_>) -> Result<JsValue, Halt> {
        let Some(io) = call.layer().io(flag::READS) else {
            c.set_credentials(call.target.credentials());
            return Ok(JsValue::UNDEFINED);
        };
        let base = call.target.headers().map(JsValue::from);
        let asked = settle(io.read(&base.unwrap_or_default(), call.own(), &call.url));
        let pre = match call
            .cancel
            .within(c.deadline.remaining(now_ms()), asked)
            .await
        {
            Ok(Ok(pre)) => pre,
            Ok(Err(e)) => return Err(CallError::new(ErrorKind::Thrown(e)).into()),
            Err(Wake::Cancelled) => return Err(call.cancel.abort_error().into()),
            Err(_) => return Err(Halt::OutOfTime),
        };
        let sent = get(&pre, "headers").map_err(|e| CallError::new(ErrorKind::Thrown(e)))?;
        c.set_credentials(credentials_of(sent.unchecked_ref()));
        Ok(pre)
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
        let (id, method, url) = (&call.request_id, &call.spec.method, &call.url);
        let asked = settle(io.retry(&error, delay_ms, id, attempt, method, url));
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
