//! Steps 5 and 6 of a call (see the parent module): what an attempt's end
//! decides. Within a round of hedged attempts, which end settles it and
//! what a failed leg teaches the breaker; at the round's end, the breaker
//! sample, the rate-limit fields and a Retry-After hold, then the verdict:
//! retry after a delay, or end the call (with why it was not retried).

use super::*;

impl Guard {
    /// Does this end settle a round of attempts? A failure that another
    /// attempt still out might improve on does not.
    pub fn decides(&self, end: &Ended) -> bool {
        match end {
            Ended::Status { status, .. } => !self.failure_statuses.contains(status),
            Ended::Network { .. } | Ended::Timeout => false,
            Ended::Success | Ended::Parse | Ended::Cancelled | Ended::Hook { .. } => true,
        }
    }

    /// A hedge leg failed while another attempt is still out: a breaker
    /// sample, what its answer said of the quota, and a refusal's wait (a
    /// 429/503 with Retry-After or a rate-limit reset: no more hedges, and
    /// every call of the key held, as when the round's last attempt gets
    /// it).
    #[allow(clippy::too_many_arguments)]
    pub fn leg_failed(
        &mut self,
        c: &mut CallState,
        permit: Option<Permit>,
        end: &Ended,
        quota: Option<&Quota>,
        now: f64,
        epoch: f64,
    ) {
        let outcome = match *end {
            Ended::Status {
                status,
                retry_after,
                reset_ms,
            } => {
                self.observe_quota(c, quota, now);
                self.refused(c, status, retry_after, reset_ms, now, epoch);
                Outcome::Status(status)
            }
            Ended::Timeout => {
                self.stats.timeouts += 1;
                Outcome::Timeout
            }
            _ => Outcome::Network,
        };
        let s = match outcome {
            Outcome::Network if c.spec.refusable => Sample::Ignored,
            _ => sample(outcome, &self.failure_statuses),
        };
        let network = matches!(outcome, Outcome::Network);
        self.record_call(&c.spec.key, permit, s, now, c.row_if(network));
    }

    /// A successful answer that took `took_ms`, for hedging at the p95.
    pub fn answered_in(&mut self, c: &CallState, took_ms: f64, now: f64) {
        if c.spec.cfg.hedge.is_some() {
            self.latencies.record(&c.spec.key, now, took_ms);
        }
    }

    /// Is `retry.retryOn` asked of an attempt that ended so (before
    /// [`Guard::settle`], its answer given by [`CallState::predicate_said`])?
    /// Only of a failure a retry could follow (a non-2xx, a timeout, a
    /// network error): not an abort, a
    /// hook's failure or a request the host refused for its own settings;
    /// a method that may be replayed; attempts left. Its `true` overrides
    /// only `retry.statuses` (ky's `shouldRetry`): the method, attempts,
    /// Retry-After, deadline and budget rules still hold.
    pub fn asks_predicate(&self, c: &CallState, end: &Ended) -> bool {
        let failure = match end {
            Ended::Timeout | Ended::Status { .. } | Ended::Network { offline: true } => true,
            Ended::Network { .. } => !c.spec.refusable,
            _ => false,
        };
        failure
            && method_may_retry(&c.retry, &c.spec.method, c.keyed)
            && c.spent() < c.retry.max_attempts
    }

    /// The attempt that decides the round ended: the breaker sample, the
    /// quota announced, a Retry-After hold, then retry or not.
    #[allow(clippy::too_many_arguments)]
    pub fn settle(
        &mut self,
        c: &mut CallState,
        permit: Option<Permit>,
        end: &Ended,
        quota: Option<&Quota>,
        now: f64,
        epoch: f64,
        rand01: f64,
    ) -> Verdict {
        // The retry granted before this attempt was made (unless a hook
        // failed before it went out: the call then ends with it unsent).
        if !matches!(end, Ended::Hook { sent: false }) {
            c.granted_at = None;
        }
        if end.answered() {
            self.observe_quota(c, quota, now);
        }
        let key: &str = &c.spec.key;
        let (outcome, retry_after_ms) = match *end {
            Ended::Success | Ended::Parse => {
                self.record(key, permit, Sample::Success, now);
                return Verdict::End;
            }
            Ended::Cancelled => {
                self.record(key, permit, Sample::Ignored, now);
                return Verdict::End;
            }
            Ended::Hook { sent } => {
                self.record(key, permit, Sample::Ignored, now);
                if !sent {
                    c.attempts = c.attempts.saturating_sub(1);
                    self.stats.attempts = self.stats.attempts.saturating_sub(1);
                }
                return Verdict::End;
            }
            Ended::Timeout => {
                self.stats.timeouts += 1;
                (Outcome::Timeout, None)
            }
            // The host may have refused the request for its own settings
            // (`Spec::refusable`): no sign of the backend's health, and the
            // same request would be refused again.
            Ended::Network { offline: false } if c.spec.refusable => {
                self.record(key, permit, Sample::Ignored, now);
                return Verdict::End;
            }
            Ended::Network { .. } => (Outcome::Network, None),
            Ended::Status {
                status,
                retry_after,
                reset_ms,
            } => {
                let ra = self.refused(c, status, retry_after, reset_ms, now, epoch);
                (Outcome::Status(status), ra)
            }
        };
        // A request that failed because the device went offline says
        // nothing about the server.
        let s = match end {
            Ended::Network { offline: true } => Sample::Ignored,
            _ => sample(outcome, &self.failure_statuses),
        };
        let network = matches!(outcome, Outcome::Network);
        self.record_call(key, permit, s, now, c.row_if(network));
        let input = RetryInput {
            outcome,
            attempts_made: c.spent(),
            method: &c.spec.method,
            has_idempotency_key: c.keyed,
            retry_after_ms,
            remaining_ms: c.deadline.remaining(now),
            said: c.said.take(),
        };
        let typical = c.backoff.clone().delay(input.attempts_made, 0.5);
        let planned = plan_retry(&c.retry, &mut c.backoff, &input, rand01);
        let mut held = false;
        if let (Ok(_), Sample::Failure, Some(b)) = (planned, s, self.breakers.as_mut()) {
            // If the key is held by its origin's burst, the origin's next
            // probe goes when this retry typically would.
            b.schedule_probe(key, now, typical);
            held = b.in_run(key);
        }
        c.unbudgeted = None;
        c.spread = false;
        match planned {
            Ok(delay_ms) if self.budget_allows(now) => {
                self.stats.retries += 1;
                c.granted_at = Some(now);
                Verdict::Retry { delay_ms }
            }
            // Failed together with others of its origin (a burst, or one
            // forming), the retry the budget denies waits with them: it
            // goes only after a blip: the burst's first probe succeeded
            // (`burst.rs`).
            Ok(delay_ms) if held => {
                c.unbudgeted = Some(now + delay_ms);
                Verdict::Retry { delay_ms }
            }
            Ok(_) => Verdict::Fail {
                denied: RetryDenied::Budget,
            },
            Err(denied) => Verdict::Fail { denied },
        }
    }

    /// A 429/503 that asks for a wait: the call sends no more hedges, and
    /// the wait (Retry-After present decides, even malformed; without one,
    /// the rate-limit reset, ky's reading) holds the other calls of its key
    /// and credentials (and the other tabs) for at most the client's own
    /// cap, whatever this call's retry options. It is returned for planning
    /// this call's retry when the call honours Retry-After.
    fn refused(
        &mut self,
        c: &mut CallState,
        status: u16,
        retry_after: Option<&str>,
        reset_ms: Option<f64>,
        now: f64,
        epoch: f64,
    ) -> Option<f64> {
        if status != 429 && status != 503 {
            return None;
        }
        if retry_after.is_some() || reset_ms.is_some() {
            c.hedges_stopped = true;
        }
        let wait = match retry_after {
            Some(v) => parse_retry_after(v, epoch),
            None => reset_ms,
        };
        if let Some(w) = wait.filter(|_| self.hold_retry_after) {
            self.hold(c, w.min(self.hold_cap), now);
        }
        wait.filter(|_| c.retry.retry_after)
    }

    /// Before [`Guard::settle`], for a 401 to an attempt that carried an
    /// auth token when the client can refresh it: may the call be sent once
    /// more, with the token read again? Once per call, within its deadline
    /// (`false`: settle the 401 as any answer). The 401 is no breaker sample
    /// (refused credentials say nothing of the server's health), and the
    /// replay is no retry: it spends no budget and no `maxAttempts`, and
    /// any method may be replayed (a 401 means the server did not act).
    /// It goes through admission again (step 2): an open breaker, a hold
    /// and the concurrency limit still apply to it.
    pub fn replay(
        &mut self,
        c: &mut CallState,
        permit: Option<Permit>,
        quota: Option<&Quota>,
        now: f64,
    ) -> bool {
        if c.replays > 0 || c.deadline.expired(now) {
            return false;
        }
        self.observe_quota(c, quota, now);
        self.record(&c.spec.key, permit, Sample::Ignored, now);
        c.replays += 1;
        c.granted_at = None;
        true
    }

    /// After [`Verdict::Retry`], a `beforeRetry` hook said no: the retry is
    /// not made (not counted, its budget given back) and the call fails
    /// with the attempt's error. A hook can only take a retry away: it is
    /// asked only once the policy has granted one.
    pub fn veto_retry(&mut self, c: &mut CallState) -> Verdict {
        self.retry_unsent(c);
        Verdict::Fail {
            denied: RetryDenied::Hook,
        }
    }

    /// The call ends before the retry it was granted went out (an abort or
    /// the deadline in its backoff, a breaker opened or a hold meanwhile, a
    /// hook that failed before sending): that retry was not made, so it is
    /// not counted and its budget is given back. "Every further attempt is
    /// a retry" (README, "budget"): `retries` counts attempts sent, as the server sees
    /// them, and a retry never sent cannot deny the next call's.
    pub fn retry_unsent(&mut self, c: &mut CallState) {
        if let Some(at) = c.granted_at.take() {
            self.stats.retries = self.stats.retries.saturating_sub(1);
            if let Some(b) = self.budget.as_mut() {
                b.give_back(at);
            }
        }
    }

    /// A call ended in failure.
    pub fn failed(&mut self) {
        self.stats.failures += 1;
    }

    /// A call joined an identical one in flight instead of sending.
    pub fn joined(&mut self) {
        self.stats.requests += 1;
        self.stats.deduped += 1;
    }

    /// What an answer announced of the quota of the call's key and
    /// credentials (calls that obey rate limits); a quota spent is for the
    /// other tabs too.
    fn observe_quota(&mut self, c: &CallState, quota: Option<&Quota>, now: f64) {
        if !c.spec.cfg.rate_limit {
            return;
        }
        if let Some(until) = self
            .limits
            .observe(c.holds_key(), quota, now, self.hold_cap)
        {
            self.tell(c, until - now, true);
        }
    }

    /// A Retry-After hold of `wait_ms` (already capped) on the call's key
    /// and credentials, for the other tabs too.
    fn hold(&mut self, c: &CallState, wait_ms: f64, now: f64) {
        if wait_ms > 0.0 {
            self.limits
                .hold(c.holds_key(), now + wait_ms, Why::RetryAfter, now);
            self.tell(c, wait_ms, false);
        }
    }

    fn tell(&mut self, c: &CallState, wait_ms: f64, quota: bool) {
        self.holds.push(Hold {
            key: c.spec.key.clone(),
            who: c.who,
            wait_ms,
            quota,
        });
    }
}
