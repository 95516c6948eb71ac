//! The steps a client's hooks and auth add to the call loop, at fixed
//! points of it: after a retry is planned, the `beforeRetry` hooks; after a
//! 401 to an attempt that carried a token, the shared refresh. What each
//! may change is the policy core's to decide (`Guard::veto_retry`,
//! `Guard::replay`); here they are only run, within the call's deadline and
//! until it is cancelled.

use wasm_bindgen::JsValue;

use super::super::call::Call;
use super::super::convert::Obj;
use super::super::engine::Engine;
use super::super::errors::CallError;
use super::super::fetch::{self, AttemptEnd};
use super::super::hooks::{self, attempt_info};
use super::super::host::now_ms;
use super::super::runtime::{boxed, Wake};
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
        let Verdict::Retry { delay_ms } = verdict else {
            return Ok(verdict);
        };
        if call.layer().hooks.before_retry.is_empty() {
            return Ok(verdict);
        }
        let out = boxed(self.ask_before_retry(call, c, err, attempt, delay_ms)).await;
        if let (Err(_), Some(r)) = (&out, response) {
            fetch::discard(r);
        }
        out
    }

    async fn ask_before_retry(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
        err: &CallError,
        attempt: u32,
        delay_ms: f64,
    ) -> Result<Verdict, CallError> {
        let layer = call.layer();
        let retry = Verdict::Retry { delay_ms };
        let now = now_ms();
        let info = attempt_info(&call.request_id, attempt, &call.spec.method, &call.url);
        let error = err.to_js();
        Obj(error.clone().into())
            .set("requestId", call.request_id.as_str())
            .set("attempts", c.attempts())
            .set("elapsedMs", c.deadline.elapsed(now));
        let error = layer.classed(error);
        let asked = hooks::before_retry(&layer.hooks.before_retry, &info, &error, delay_ms);
        let answer = call.cancel.within(c.deadline.remaining(now), asked).await;
        if let Ok(Ok(true)) = answer {
            return Ok(retry);
        }
        let vetoed = self.decide(&call.request_id, |g| g.veto_retry(c));
        match answer {
            Ok(Ok(_)) => Ok(vetoed),
            Ok(Err(e)) => Err(e),
            Err(Wake::Cancelled) => Err(call.cancel.abort_error()),
            // The deadline passed while the hooks ran: no time to retry.
            Err(_) => Ok(Verdict::Fail {
                denied: RetryDenied::Deadline,
            }),
        }
    }
}

impl Engine {
    /// A 401 to an attempt that carried the client's token, when the
    /// client can refresh it and the policy core allows a replay
    /// (`Guard::replay`): waits for the one refresh shared by the client and
    /// its derived clients (none if one finished since the token was read),
    /// within the deadline. A refresh that throws ends the call with the 401
    /// (`cause` what it threw); `fetch()` resolves with the 401 Response.
    pub(super) async fn after_401(
        &self,
        call: &Call,
        c: &mut CallState<'_>,
        end: AttemptEnd,
        send: &Attempt,
        quota: Option<&Quota>,
    ) -> Step {
        let auth = call.layer().auth.clone().filter(|a| a.can_refresh());
        let (Some(seen), Some(auth)) = (end.unauthorized(), auth) else {
            return Step::Settle(end);
        };
        let replay = self.decide(&call.request_id, |g| {
            g.replay(c, send.permit, quota, now_ms())
        });
        if !replay {
            return Step::Settle(end);
        }
        let wait = call
            .cancel
            .within(c.deadline.remaining(now_ms()), auth.refreshed(seen));
        let refreshed = boxed(wait).await;
        let (err, response) = match end.into_result(&call.cancel, send.phase, false) {
            Ok(v) => return Step::Done(Ok(v)),
            Err(failed) => failed,
        };
        let (err, cause) = match refreshed {
            Ok(Ok(())) => {
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
