//! The call loop's decisions, as one sans-IO state machine.
//!
//! # Why
//!
//! Which attempt goes out, into which slot, whether a failure is
//! retried and after how long, what the breaker learns and which error a
//! call ends with are the decisions that make or stop a retry storm. Here
//! they are plain values: the web side's call driver (`src/web/driver.rs`)
//! asks [`Guard`] at each step and does only the I/O (fetch, timers, aborts,
//! events, other tabs), and `tests/sim.rs` drives this same code through
//! outages and brownouts in virtual time, so the simulation proves the
//! shipped loop and not a copy of it.
//!
//! # One call
//!
//! As the driver runs it:
//!
//! 1. [`Guard::start`] gives the call its [`CallState`] (deadline, backoff).
//! 2. [`Guard::admit`] until it answers [`Admission::Go`]: it stops a call
//!    whose deadline passed, waits out an offline host, a Retry-After hold
//!    or a spent quota ([`Admission::Wait`]), holds a call while the key's
//!    half-open probe is out ([`Admission::AwaitProbe`], see `halfopen.rs`),
//!    or refuses (open breaker, a hold beyond the deadline). Holds and
//!    quotas are those of the call's key *and* credentials
//!    ([`CallState::set_credentials`]): on a server sharing one client, one
//!    user's 429 never holds another's calls; breakers, budget and slots are
//!    the key's, shared by all. A hold binds for at most the client's own
//!    `maxRetryAfterMs`, whatever the options of the call that learnt it.
//! 3. A concurrency slot: [`Guard::acquire_slot`] (the queue wait is the
//!    driver's; [`Guard::leave_queue`], [`Guard::release_slot`]).
//! 4. [`Guard::begin`]: the attempt's number, timeout and phase, or a stop
//!    when the slot came right at the deadline.
//! 5. While it runs, hedges ([`Guard::hedge_due`], [`Guard::hedge`]) and
//!    failed hedge legs ([`Guard::leg_failed`]); [`Guard::decides`] says
//!    which end settles the round.
//! 6. [`Guard::settle`]: the breaker sample, the rate-limit fields, a
//!    Retry-After hold, then [`Verdict::Retry`] after a delay (back to 2) or
//!    the end of the call (weighing what the `retry.retryOn` predicate
//!    said, asked first when [`Guard::asks_predicate`]). Before it, a 401
//!    to an attempt that carried an auth token may be replayed once
//!    ([`Guard::replay`]: back to 2, no retry, no sample); after a `Retry`, a `beforeRetry` hook may stop it
//!    ([`Guard::veto_retry`]: the call fails, `retryDenied: 'hook'`).
//!
//! # Time, chance and news
//!
//! Time (`now`, `epoch`) and randomness (`rand01`) are arguments. Breaker
//! transitions and holds other tabs must hear of queue up until the engine
//! drains them ([`Guard::drain_transitions`], [`Guard::drain_holds`]).
//! Tested below, and at scale in `tests/sim.rs`.

use super::backoff::{parse_retry_after, Backoff};
use super::breaker::{
    Breakers, InRow, Permit, ProbeWaiter, Snapshot, State as BreakerState, Transition,
};
use super::budget::RetryBudget;
use super::classify::Sample;
use super::classify::{method_may_retry, plan_retry, sample, Outcome, RetryDenied, RetryInput};
use super::credentials::Credentials;
use super::deadline::Deadline;
use super::latency::Latencies;
use super::limiter::{Acquire, Limiter, WaiterId};
use super::options::{
    BreakerConfig, CallConfig, ClientConfig, HedgeAfter, HedgeConfig, RetryConfig, DEFAULT_STATUSES,
};
use super::ratelimit::{Admit, HoldKey, Limits, Quota, Why};
use super::stats::Stats;

mod burst;
mod halfopen;
mod news;
mod settle;

/// What the decisions need to know of one call, fixed before its first
/// attempt (the engine's call holds it; a [`CallState`] borrows it).
#[derive(Debug, Clone)]
pub struct Spec {
    /// The breaker key (also the key of latencies, and with the call's
    /// credentials the key of its holds and quotas).
    pub key: String,
    pub method: String,
    /// The call carries an idempotency key: any method may be replayed.
    pub has_key: bool,
    pub cfg: CallConfig,
    /// `schema()`: an offline host or a hold fails the call at once (the
    /// cache answers) instead of waiting.
    pub prefer_cache: bool,
    /// The request's own settings may make the host reject it (`redirect`
    /// 'error' or 'manual', an `integrity`, `cache: 'only-if-cached'`), and
    /// the host's rejection cannot be told from a network failure: such a
    /// rejection is neither a breaker sample nor retried (README, "hooks").
    pub refusable: bool,
}

/// One call's progress through the loop.
#[derive(Debug, Clone)]
pub struct CallState<'a> {
    pub spec: &'a Spec,
    pub deadline: Deadline,
    retry: RetryConfig,
    backoff: Backoff,
    attempts: u32,
    /// Hedges sent, over all the call's rounds.
    hedges: u32,
    /// A leg was refused with a wait (429/503 with Retry-After or a
    /// rate-limit reset): no more hedges.
    hedges_stopped: bool,
    /// Attempts that were a 401's replay ([`Guard::replay`]): not counted
    /// against `maxAttempts`.
    replays: u32,
    /// Attempts spent without sending: its origin's probes that failed
    /// while it waited for them (see `burst.rs`). Counted against
    /// `maxAttempts`.
    lost: u32,
    /// The burst it is held by, and that run's failed probes it counted.
    burst: Option<(u64, u32)>,
    /// Its retry planned last was denied by the budget while its key had
    /// failed together with others (due at this time): it goes only after
    /// a blip (the burst's first probe succeeded, nothing failed since), or
    /// as the probe if the budget allows by then (see `burst.rs`).
    unbudgeted: Option<f64>,
    /// It waited its release from a burst for its retry planned last (see
    /// `burst.rs`).
    spread: bool,
    /// When the retry budget granted the retry last planned, until that
    /// retry goes out (given back if the call ends first,
    /// [`Guard::retry_unsent`]).
    granted_at: Option<f64>,
    /// The reason of the last `Wait` announced: one event per reason.
    told: Option<Why>,
    /// Whom the call speaks for: the holds it obeys and sets are those of
    /// its breaker key and these credentials.
    who: Credentials,
    /// The attempt about to go (or last gone) may be replayed as keyed:
    /// the call carries a key and the request as sent does too, the same
    /// as the attempt before ([`CallState::key_sent`]).
    keyed: bool,
    /// The Idempotency-Key the last attempt was sent with, as the host
    /// read it from the request as sent (`None`: absent or blank).
    last_key: Option<String>,
    /// What `retry.retryOn` said of the attempt being settled.
    said: Option<bool>,
    /// Who it is in its key's row of failures: its own network errors
    /// alone never open the breaker (`Breakers::record_call`,
    /// [`CallState::row_if`]).
    row: InRow,
    /// A fresh one for each failure that names no call ([`CallState::row_if`]).
    anyone: InRow,
}

impl CallState<'_> {
    /// Attempts sent so far, hedges included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Its retry planned last was denied by the budget and waits with its
    /// origin's burst (see `burst.rs`): it may yet end denied
    /// ([`Stop::Budget`]).
    pub fn unbudgeted(&self) -> bool {
        self.unbudgeted.is_some()
    }

    /// Whom a failure names in its key's row of failures: the call for a
    /// network error (the host may have refused the request itself, a CORS
    /// failure or a bad redirect, and would again: its retries alone must
    /// not open the breaker), else no call (a status or a timeout is the
    /// server's: it counts in the row as any call's).
    fn row_if(&mut self, network: bool) -> &mut InRow {
        if network {
            &mut self.row
        } else {
            self.anyone = InRow::default();
            &mut self.anyone
        }
    }

    /// Attempts counted against `maxAttempts`: not a 401's replay, and
    /// the probes lost while held (see `burst.rs`).
    fn spent(&self) -> u32 {
        self.attempts.saturating_sub(self.replays) + self.lost
    }

    /// What `retry.retryOn` answered for the attempt the next
    /// [`Guard::settle`] settles (true, false, or `None`: undefined).
    pub fn predicate_said(&mut self, said: Option<bool>) {
        self.said = said;
    }

    /// The credentials the call sends (as the host computed them from its
    /// headers): its holds are those of the breaker key and these
    /// credentials, so one user's 429 never holds another's calls.
    /// `Credentials::NONE` until set.
    pub fn set_credentials(&mut self, who: Credentials) {
        self.who = who;
    }

    /// The `Idempotency-Key` of the request the next attempt sends, read
    /// from it as sent (a client's hooks may have rebuilt its headers):
    /// that attempt may be replayed as keyed only if the call carries a key
    /// and this one is present, not blank, and the same as the attempt
    /// before's. Otherwise its failure is final for a method outside
    /// `retry.methods` (README, "idempotencyKey"): a second key, or none, is a second execution.
    pub fn key_sent(&mut self, key: Option<&str>) {
        // Blank: the host's Headers trims a value's outer spaces and tabs.
        let key = key.filter(|k| !k.bytes().all(|b| b == b' ' || b == b'\t'));
        let same = self.last_key.is_none() || self.last_key.as_deref() == key;
        self.keyed = self.spec.has_key && key.is_some() && same;
        self.last_key = key.map(str::to_owned);
    }

    /// The key of the holds and quota windows the call obeys and sets.
    fn holds_key(&self) -> HoldKey<'_> {
        HoldKey {
            key: &self.spec.key,
            who: self.who,
        }
    }

    /// Hedges sent so far.
    pub fn hedges(&self) -> u32 {
        self.hedges
    }

    /// A hedge is left under `hedge.max` and `maxAttempts`, and no leg was
    /// told to wait.
    fn may_hedge(&self) -> bool {
        let max = self.spec.cfg.hedge.map_or(0, |h| h.max);
        !self.hedges_stopped && self.hedges < max && self.attempts < self.retry.max_attempts
    }
}

/// Why a call stops before an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// The deadline passed: the call ends with the failure its last retry
    /// was planned after (`retryDenied: 'deadline'`), or a TimeoutError.
    Deadline,
    /// The host is offline and the call may not wait for it.
    Offline,
    /// An open breaker, every probe slot taken (for `schema()`, which does
    /// not wait for the probe), or a hold (Retry-After, a spent quota)
    /// beyond what the call may wait: CircuitOpenError.
    CircuitOpen { retry_in_ms: f64 },
    /// A retry the budget denied was released by no blip (see `burst.rs`):
    /// the call ends with the failure it was planned after
    /// (`retryDenied: 'budget'`).
    Budget,
}

/// [`Guard::admit`]'s answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Attempt: take a slot. With `Some(Permit::Probe)` the attempt is the
    /// breaker's half-open probe (one across tabs, where they share).
    Go(Option<Permit>),
    /// Wait for the host to come online (within the deadline), then ask again.
    Online,
    /// Wait `ms`, then ask again; `announce` when this reason is new to the
    /// call (a `wait` event).
    Wait {
        ms: f64,
        why: Why,
        announce: bool,
    },
    /// The key is half-open and its probes are out: wait (within the
    /// deadline, abortable) until [`Guard::drain_released`] names this
    /// waiter, then ask again; leave with [`Guard::stop_waiting`].
    AwaitProbe(ProbeWaiter),
    Stop(Stop),
}

/// Under which timeout an attempt runs (`TimeoutError.phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `timeoutMs`.
    Attempt,
    /// What was left of `deadlineMs`, shorter than `timeoutMs`.
    Deadline,
    /// The wait for a concurrency slot reached the deadline.
    Queue,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Attempt => "attempt",
            Phase::Deadline => "deadline",
            Phase::Queue => "queue",
        }
    }
}

/// An attempt to send now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attempt {
    /// 1 for the first attempt; hedges count too.
    pub attempt: u32,
    pub permit: Option<Permit>,
    pub timeout_ms: f64,
    pub phase: Phase,
    pub started_ms: f64,
    pub elapsed_ms: f64,
    pub remaining_ms: f64,
}

/// How an attempt ended, as far as the decisions care.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ended<'a> {
    /// A 2xx, read.
    Success,
    /// A 2xx whose body did not parse: the server answered.
    Parse,
    /// The caller aborted (or the client closed).
    Cancelled,
    Timeout,
    /// `offline`: the host went offline, which says nothing of the server.
    Network {
        offline: bool,
    },
    /// A hook, a header function or the auth token failed (threw, gave
    /// something unusable, or ran out the attempt's time): the call ends
    /// with that, never retried, and it is no breaker sample (the server is
    /// not at fault). `sent: false`: before the request went out, so no
    /// attempt is counted either.
    Hook {
        sent: bool,
    },
    /// A non-2xx answer. `retry_after`: the header, when present (it
    /// decides even malformed); `reset_ms`: the rate-limit reset, the wait
    /// of a 429/503 without one.
    Status {
        status: u16,
        retry_after: Option<&'a str>,
        reset_ms: Option<f64>,
    },
}

impl Ended<'_> {
    /// The server answered (its rate-limit fields are news).
    pub fn answered(&self) -> bool {
        matches!(self, Ended::Success | Ended::Parse | Ended::Status { .. })
    }
}

/// [`Guard::settle`]'s answer for the attempt that decides a round. (Two
/// more steps may follow it, both asked by the host: [`Guard::replay`]
/// before it, for a 401 the auth token may fix; [`Guard::veto_retry`]
/// after a `Retry`, when a `beforeRetry` hook says no.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The call ends with this attempt as it is: success, parse error,
    /// abort.
    End,
    /// Try again after `delay_ms` (a `retry` event); counted as a retry.
    Retry { delay_ms: f64 },
    /// The call fails with this attempt's error, not retried because of
    /// `denied`.
    Fail { denied: RetryDenied },
}

/// A hold the other tabs should respect too.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub key: String,
    /// The credentials of the calls it binds (only those).
    pub who: Credentials,
    pub wait_ms: f64,
    /// A spent quota (binds only calls that obey rate limits), or a
    /// Retry-After.
    pub quota: bool,
}

/// Everything one client decides with: budget, breakers, limiter, holds,
/// latencies and the counters of `stats()`.
#[derive(Debug)]
pub struct Guard {
    pub stats: Stats,
    budget: Option<RetryBudget>,
    breakers: Option<Breakers>,
    limiter: Limiter,
    limits: Limits,
    latencies: Latencies,
    failure_statuses: Vec<u16>,
    /// The longest hold this client sets or accepts: its own
    /// `maxRetryAfterMs`, whatever a call's options say.
    hold_cap: f64,
    /// The client honours Retry-After (`retry.retryAfter`): a refusal's
    /// wait holds the other calls.
    hold_retry_after: bool,
    holds: Vec<Hold>,
}

impl Guard {
    pub fn new(cfg: &ClientConfig) -> Guard {
        let retry = cfg.retry.clone().unwrap_or_default();
        Guard {
            stats: Stats::default(),
            budget: cfg.budget.as_ref().map(RetryBudget::new),
            breakers: cfg.breaker.clone().map(Breakers::new),
            limiter: cfg
                .concurrency
                .as_ref()
                .map_or_else(Limiter::unlimited, Limiter::new),
            limits: Limits::new(),
            latencies: Latencies::new(
                cfg.breaker
                    .as_ref()
                    .map_or(BreakerConfig::default().window_ms, |b| b.window_ms),
            ),
            failure_statuses: cfg
                .retry
                .as_ref()
                .map_or(DEFAULT_STATUSES.to_vec(), |r| r.statuses.clone()),
            hold_cap: retry.max_retry_after_ms,
            hold_retry_after: retry.retry_after,
            holds: Vec::new(),
        }
    }

    /// A new call: counted, its deadline starting `now`.
    pub fn start<'a>(&mut self, spec: &'a Spec, now: f64) -> CallState<'a> {
        self.stats.requests += 1;
        let retry = spec.cfg.retry.clone().unwrap_or_else(RetryConfig::off);
        CallState {
            spec,
            deadline: Deadline::new(now, spec.cfg.deadline_ms),
            backoff: Backoff::from_config(&retry),
            retry,
            attempts: 0,
            hedges: 0,
            hedges_stopped: false,
            replays: 0,
            lost: 0,
            burst: None,
            unbudgeted: None,
            spread: false,
            granted_at: None,
            told: None,
            who: Credentials::NONE,
            keyed: spec.has_key,
            last_key: None,
            said: None,
            row: InRow::default(),
            anyone: InRow::default(),
        }
    }

    /// May the call send now? Asked again after every wait.
    pub fn admit(&mut self, c: &mut CallState, now: f64, offline: bool, rand01: f64) -> Admission {
        if c.deadline.expired(now) {
            return Admission::Stop(Stop::Deadline);
        }
        if offline {
            return if c.spec.cfg.wait_for_online && !c.spec.prefer_cache {
                Admission::Online
            } else {
                Admission::Stop(Stop::Offline)
            };
        }
        // schema() fails over at once, but not on the hold its own last
        // answer set (its planned retry waits exactly that long, and a
        // timer may fire a hair early).
        let max_wait = if c.spec.prefer_cache && c.attempts == 0 {
            0.0
        } else {
            c.deadline.remaining(now)
        };
        match self
            .limits
            .admit(c.holds_key(), now, max_wait, c.spec.cfg.rate_limit)
        {
            Admit::Now => {}
            Admit::Wait { ms, why } => {
                let announce = c.told != Some(why);
                c.told = Some(why);
                return Admission::Wait { ms, why, announce };
            }
            Admit::Refuse { ms, .. } => {
                return Admission::Stop(Stop::CircuitOpen { retry_in_ms: ms })
            }
        }
        if let Some(held) = self.burst_admission(c, now, max_wait, rand01) {
            return held;
        }
        match self.breakers.as_mut() {
            None => Admission::Go(None),
            Some(b) => match b.acquire(&c.spec.key, now, rand01) {
                Ok(p) => Admission::Go(Some(p)),
                Err(retry_in_ms) => {
                    // Half-open with its probes out: wait for their outcome
                    // (schema() fails over at once, as on a hold).
                    let waiter = if max_wait > 0.0 {
                        b.wait(&c.spec.key)
                    } else {
                        None
                    };
                    match waiter {
                        Some(id) => Admission::AwaitProbe(id),
                        None => Admission::Stop(Stop::CircuitOpen { retry_in_ms }),
                    }
                }
            },
        }
    }

    /// A concurrency slot for the call admitted; a full queue is counted.
    pub fn acquire_slot(&mut self) -> Acquire {
        let a = self.limiter.try_acquire();
        if a == Acquire::Full {
            self.stats.queue_rejected += 1;
        }
        a
    }

    /// Leaves the queue (abort, deadline): `false` when the slot was granted
    /// meanwhile (then [`Guard::release_slot`] it).
    pub fn leave_queue(&mut self, id: WaiterId) -> bool {
        self.limiter.cancel(id)
    }

    /// `n` attempts in flight that took no slot hold one each (see
    /// [`Limiter::hold`]); each is [`Guard::release_slot`]d as it ends.
    pub fn hold_slots(&mut self, n: u32) {
        self.limiter.hold(n);
    }

    /// Frees a slot; a queued call it passes to is returned.
    pub fn release_slot(&mut self) -> Option<WaiterId> {
        self.limiter.release()
    }

    pub fn in_flight(&self) -> u32 {
        self.limiter.in_flight()
    }

    pub fn queued(&self) -> u32 {
        self.limiter.queued()
    }

    /// The call admitted with `permit` will make no attempt after all (its
    /// slot or lock wait ended): the breaker learns nothing.
    pub fn abandon(&mut self, c: &CallState, permit: Option<Permit>, now: f64) {
        self.record(&c.spec.key, permit, Sample::Ignored, now);
    }

    /// The attempt, its slot taken: `None` when the deadline passed
    /// meanwhile (nothing left to run in; the permit is given back and the
    /// engine frees the slot).
    pub fn begin(
        &mut self,
        c: &mut CallState,
        permit: Option<Permit>,
        now: f64,
    ) -> Option<Attempt> {
        if c.deadline.expired(now) {
            self.abandon(c, permit, now);
            return None;
        }
        Some(self.send(c, permit, now))
    }

    /// The call's first attempt, sent at `started` before the engine was
    /// in (the boot build, `src/boot.rs`), adopted as its own: counted as
    /// [`Guard::begin`] counts one, and its outcome a breaker sample when
    /// the key's breaker lets a call through `now` (one that another tab
    /// opened meanwhile learns nothing from it, and refuses the retry).
    /// What follows is the call's as usual: [`Guard::settle`] its end.
    pub fn adopt(&mut self, c: &mut CallState, started: f64, now: f64, rand01: f64) -> Attempt {
        let key: &str = &c.spec.key;
        let permit = self
            .breakers
            .as_mut()
            .and_then(|b| b.acquire(key, now, rand01).ok());
        self.send(c, permit, started)
    }

    fn send(&mut self, c: &mut CallState, permit: Option<Permit>, now: f64) -> Attempt {
        c.attempts += 1;
        self.stats.attempts += 1;
        if c.attempts == 1 {
            if let Some(b) = self.budget.as_mut() {
                b.record_call(now);
            }
        }
        let remaining = c.deadline.remaining(now);
        let (timeout_ms, phase) = if remaining < c.spec.cfg.timeout_ms {
            (remaining, Phase::Deadline)
        } else {
            (c.spec.cfg.timeout_ms, Phase::Attempt)
        };
        Attempt {
            attempt: c.attempts,
            permit,
            timeout_ms,
            phase,
            started_ms: now,
            elapsed_ms: c.deadline.elapsed(now),
            remaining_ms: remaining,
        }
    }

    /// How long after the last attempt started a hedge is due; `None`
    /// without `hedge`, once the call has sent `hedge.max` hedges or
    /// `maxAttempts` attempts (hedges count toward both, over all its
    /// rounds) or a leg was told to wait, or before the endpoint has a p95
    /// (a guess would hedge every call).
    pub fn hedge_due(&self, c: &CallState, last_started: f64, now: f64) -> Option<f64> {
        let h: HedgeConfig = c.spec.cfg.hedge?;
        if !c.may_hedge() {
            return None;
        }
        let after = match h.after {
            HedgeAfter::Ms(ms) => ms,
            HedgeAfter::P95 => self.latencies.p95(&c.spec.key, now)?,
        };
        Some(after - (now - last_started))
    }

    /// A hedge, if everything allows one now: a call that may be replayed,
    /// hedges and attempts left (`hedge.max`, `maxAttempts`), time left, no
    /// hold or quota spacing, a slot free at once (never queued), a closed
    /// breaker, and the retry budget (a hedge is a retry for it). Its slot
    /// is taken.
    pub fn hedge(&mut self, c: &mut CallState, now: f64, rand01: f64) -> Option<Attempt> {
        let key: &str = &c.spec.key;
        if !c.may_hedge()
            || c.deadline.expired(now)
            || !method_may_retry(&c.retry, &c.spec.method, c.keyed)
        {
            return None;
        }
        if let Some(b) = self.breakers.as_mut() {
            if b.state(key, now) != BreakerState::Closed {
                return None;
            }
        }
        // A send like any other: admitted, it counts against the quota.
        if self
            .limits
            .admit(c.holds_key(), now, 0.0, c.spec.cfg.rate_limit)
            != Admit::Now
            || !self.limiter.try_take()
        {
            return None;
        }
        let permit = match self.breakers.as_mut().map(|b| b.acquire(key, now, rand01)) {
            None => None,
            Some(Ok(Permit::Normal)) => Some(Permit::Normal),
            // Shed by adaptive throttling (or a probe: not for a hedge).
            Some(other) => {
                self.give_back_slot();
                self.record(key, other.ok(), Sample::Ignored, now);
                return None;
            }
        };
        if !self.budget_allows(now) {
            self.give_back_slot();
            self.record(key, permit, Sample::Ignored, now);
            return None;
        }
        self.stats.retries += 1;
        c.hedges += 1;
        Some(self.send(c, permit, now))
    }

    /// A breaker sample for `key`, when the call holds a breaker permit.
    fn record(&mut self, key: &str, permit: Option<Permit>, s: Sample, now: f64) {
        self.record_call(key, permit, s, now, &mut InRow::default());
    }

    /// [`Guard::record`] for an attempt of the call `row` names: its own
    /// retries alone never open the breaker (`Breakers::record_call`).
    fn record_call(
        &mut self,
        key: &str,
        permit: Option<Permit>,
        s: Sample,
        now: f64,
        row: &mut InRow,
    ) {
        if let (Some(p), Some(b)) = (permit, self.breakers.as_mut()) {
            b.record_call(key, p, s, now, row);
        }
    }

    /// Frees the slot `try_take` just took: nobody can be queued for it
    /// (a free slot means an empty queue), so nobody is woken.
    fn give_back_slot(&mut self) {
        let _none = self.limiter.release();
    }

    /// The retry budget allows one more retry (or there is none); a denial
    /// is counted.
    fn budget_allows(&mut self, now: f64) -> bool {
        let allowed = self.budget.as_mut().is_none_or(|b| b.try_retry(now));
        if !allowed {
            self.stats.budget_denied += 1;
        }
        allowed
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::policy::options::{HedgeConfig, Jitter, LimiterConfig};
    use proptest::prelude::*;

    pub(super) const KEY: &str = "GET https://api.example/items";

    pub(super) fn cfg() -> ClientConfig {
        let mut c = ClientConfig::default();
        // exact waits
        if let Some(r) = c.retry.as_mut() {
            r.jitter = Jitter::None;
        }
        c
    }

    pub(super) fn call_cfg(c: &ClientConfig) -> CallConfig {
        CallConfig::resolve(c, &Default::default()).unwrap()
    }

    /// A call's spec for as long as the test runs.
    /// A page load's calls: 6 over 3 endpoints of one backend, two each.
    pub(super) fn page_specs(cc: &CallConfig) -> Vec<&'static Spec> {
        ["user", "user", "orders", "orders", "stock", "stock"]
            .iter()
            .map(|path| {
                &*Box::leak(Box::new(Spec {
                    key: format!("GET https://api.example/{path}"),
                    ..spec(cc, "GET").clone()
                }))
            })
            .collect()
    }

    pub(super) fn spec(cfg: &CallConfig, method: &str) -> &'static Spec {
        Box::leak(Box::new(Spec {
            key: KEY.to_string(),
            method: method.to_string(),
            has_key: false,
            cfg: cfg.clone(),
            prefer_cache: false,
            refusable: false,
        }))
    }

    pub(super) const UNAVAILABLE: Ended<'static> = Ended::Status {
        status: 503,
        retry_after: None,
        reset_ms: None,
    };

    /// Admits and begins an attempt at `now`.
    pub(super) fn send(g: &mut Guard, c: &mut CallState, now: f64) -> Attempt {
        let Admission::Go(permit) = g.admit(c, now, false, 0.5) else {
            panic!("not admitted")
        };
        assert_eq!(g.acquire_slot(), Acquire::Granted);
        g.begin(c, permit, now).unwrap()
    }

    pub(super) fn settle(
        g: &mut Guard,
        c: &mut CallState,
        s: &Attempt,
        end: Ended,
        now: f64,
    ) -> Verdict {
        let _ = g.release_slot();
        g.settle(c, s.permit, &end, None, now, 0.0, 0.5)
    }

    /// A page load in a blip or an outage: [`page_specs`]' 6 calls, all
    /// out at once, all answered 503 at `t = 5`; each retries after 1000 ms
    /// (granted or, in a burst, denied by the budget and held).
    pub(super) fn page_fails(g: &mut Guard, cc: &CallConfig) -> Vec<CallState<'static>> {
        let mut calls: Vec<CallState> = page_specs(cc).iter().map(|s| g.start(s, 0.0)).collect();
        let attempts: Vec<Attempt> = calls.iter_mut().map(|c| send(g, c, 0.0)).collect();
        for (c, a) in calls.iter_mut().zip(&attempts) {
            let v = settle(g, c, a, UNAVAILABLE, 5.0);
            assert_eq!(v, Verdict::Retry { delay_ms: 1000.0 });
        }
        calls
    }

    /// The call goes at `t` as its origin's probe.
    pub(super) fn origin_probe(g: &mut Guard, c: &mut CallState, t: f64) -> Attempt {
        let probe = send(g, c, t);
        assert_eq!(probe.permit, Some(Permit::Origin), "no origin probe");
        probe
    }

    /// A burst's first call goes at `t` as its origin's probe; the others
    /// wait for it.
    pub(super) fn probe_goes(g: &mut Guard, calls: &mut [CallState], t: f64) -> Attempt {
        let probe = origin_probe(g, &mut calls[0], t);
        for c in calls.iter_mut().skip(1) {
            assert!(matches!(
                g.admit(c, t, false, 0.5),
                Admission::AwaitProbe(_)
            ));
        }
        probe
    }

    #[test]
    fn a_success_ends_the_call_and_counts_one_attempt() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(
            (s.attempt, s.phase, s.timeout_ms),
            (1, Phase::Attempt, 6000.0)
        );
        assert_eq!(
            settle(&mut g, &mut c, &s, Ended::Success, 10.0),
            Verdict::End
        );
        assert_eq!(
            (g.stats.requests, g.stats.attempts, g.stats.retries),
            (1, 1, 0)
        );
        assert_eq!(g.in_flight(), 0);
    }

    #[test]
    fn an_adopted_first_attempt_is_the_calls_first_and_its_retry_the_second() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        // Sent at 0 by the boot build; the engine arrives at 400 with its 503.
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let a = g.adopt(&mut c, 0.0, 400.0, 0.5);
        assert_eq!((a.attempt, a.started_ms, a.timeout_ms), (1, 0.0, 6000.0));
        assert_eq!(
            a.permit,
            Some(Permit::Normal),
            "its outcome is a breaker sample"
        );
        assert_eq!(
            g.settle(&mut c, a.permit, &UNAVAILABLE, None, 400.0, 0.0, 0.5),
            Verdict::Retry { delay_ms: 1000.0 }
        );
        let s = send(&mut g, &mut c, 1400.0);
        assert_eq!(s.attempt, 2);
        assert_eq!(
            (g.stats.requests, g.stats.attempts, g.stats.retries),
            (1, 2, 1)
        );
        // The deadline ran from the adopted attempt's start.
        assert_eq!(s.remaining_ms, 20_000.0 - 1400.0);
    }

    #[test]
    fn an_adopted_attempt_is_never_retried_against_a_breaker_another_tab_opened() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        // Learned when the engine arrived, before it adopts the attempt.
        g.peer_open(KEY, 300.0, 30_000.0, 30_000.0);
        let a = g.adopt(&mut c, 0.0, 400.0, 0.5);
        assert_eq!(
            (a.attempt, a.permit),
            (1, None),
            "no sample for an open key"
        );
        let v = g.settle(&mut c, a.permit, &UNAVAILABLE, None, 400.0, 0.0, 0.5);
        if let Verdict::Retry { delay_ms } = v {
            assert!(matches!(
                g.admit(&mut c, 400.0 + delay_ms, false, 0.5),
                Admission::Stop(Stop::CircuitOpen { .. })
            ));
        }
        assert_eq!(g.stats.attempts, 1);
    }

    #[test]
    fn a_keyed_post_is_retried_only_while_the_key_as_sent_stays_the_same() {
        let client = cfg();
        let cc = call_cfg(&client);
        let keyed: &'static Spec = Box::leak(Box::new(Spec {
            has_key: true,
            ..spec(&cc, "POST").clone()
        }));
        // What each attempt sent: the verdict after its failure.
        let run = |sent: &[Option<&str>], spec: &'static Spec| {
            let mut g = Guard::new(&client);
            let mut c = g.start(spec, 0.0);
            let mut now = 0.0;
            let mut verdicts = Vec::new();
            for key in sent {
                c.key_sent(*key);
                let s = send(&mut g, &mut c, now);
                let v = settle(&mut g, &mut c, &s, Ended::Network { offline: false }, now);
                if let Verdict::Retry { delay_ms } = v {
                    now += delay_ms;
                }
                verdicts.push(v);
            }
            verdicts
        };
        let retry = |delay_ms| Verdict::Retry { delay_ms };
        let method = Verdict::Fail {
            denied: RetryDenied::Method,
        };
        let k = Some("order-42");
        assert_eq!(run(&[k, k], keyed), [retry(1000.0), retry(2000.0)]);
        // absent, blank
        assert_eq!(run(&[None], keyed), [method]);
        assert_eq!(run(&[Some("  ")], keyed), [method]);
        assert_eq!(run(&[Some(" \t")], keyed), [method]);
        // rebuilt without it on the retry, or with another: that failure is final
        assert_eq!(run(&[k, None], keyed), [retry(1000.0), method]);
        assert_eq!(run(&[k, Some("fresh-uuid")], keyed)[1], method);
        // a key a hook adds to a call that carries none makes no replay
        assert_eq!(run(&[k], spec(&cc, "POST")), [method]);
    }

    #[test]
    fn every_retry_denied_reason() {
        let client = cfg();
        let cc = call_cfg(&client);
        let fail = |method: &str, end: Ended, deadline_ms: f64| {
            let mut cc = cc.clone();
            cc.deadline_ms = deadline_ms;
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, method), 0.0);
            let s = send(&mut g, &mut c, 0.0);
            settle(&mut g, &mut c, &s, end, 1.0)
        };
        let denied = |d| Verdict::Fail { denied: d };
        let status = |status| Ended::Status {
            status,
            retry_after: None,
            reset_ms: None,
        };
        assert_eq!(
            fail("GET", status(404), 20_000.0),
            denied(RetryDenied::Status)
        );
        assert_eq!(
            fail("POST", UNAVAILABLE, 20_000.0),
            denied(RetryDenied::Method)
        );
        assert_eq!(
            fail("GET", UNAVAILABLE, 500.0),
            denied(RetryDenied::Deadline)
        );
        let too_long = Ended::Status {
            status: 429,
            retry_after: Some("120"),
            reset_ms: None,
        };
        assert_eq!(
            fail("GET", too_long, 20_000.0),
            denied(RetryDenied::RetryAfter)
        );
        assert_eq!(
            fail("GET", UNAVAILABLE, 20_000.0),
            Verdict::Retry { delay_ms: 1000.0 }
        );

        // attempts: the third failure of three
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let mut now = 0.0;
        let mut verdicts = Vec::new();
        for _ in 0..3 {
            let s = send(&mut g, &mut c, now);
            let v = settle(&mut g, &mut c, &s, Ended::Timeout, now);
            if let Verdict::Retry { delay_ms } = v {
                now += delay_ms;
            }
            verdicts.push(v);
        }
        assert_eq!(verdicts[2], denied(RetryDenied::Attempts));
        assert_eq!((g.stats.timeouts, g.stats.retries), (3, 2));

        // budget: three retries in the window (minRetries), then none (no
        // breaker, which would open after three failures in a row)
        let mut no_breaker = client.clone();
        no_breaker.breaker = None;
        let mut g = Guard::new(&no_breaker);
        let mut denials = 0;
        for i in 0..5 {
            let mut c = g.start(spec(&cc, "GET"), f64::from(i));
            let s = send(&mut g, &mut c, f64::from(i));
            if settle(
                &mut g,
                &mut c,
                &s,
                Ended::Network { offline: false },
                f64::from(i),
            ) == denied(RetryDenied::Budget)
            {
                denials += 1;
            }
        }
        assert_eq!((denials, g.stats.budget_denied, g.stats.retries), (2, 2, 3));
    }

    /// What the breaker's window holds for KEY: (samples, failures).
    fn window(g: &mut Guard, now: f64) -> (u32, u32) {
        g.snapshot(now)
            .into_iter()
            .find(|s| s.key == KEY)
            .map_or((0, 0), |s| {
                let failures = (s.failure_rate * f64::from(s.samples)).round();
                (s.samples, failures as u32)
            })
    }

    #[test]
    fn every_end_kind_settles_and_samples_as_the_contract_says() {
        let client = cfg();
        let cc = call_cfg(&client);
        let status = |status| Ended::Status {
            status,
            retry_after: None,
            reset_ms: None,
        };
        let retry = Verdict::Retry { delay_ms: 1000.0 };
        // (end, verdict of a first GET attempt, (samples, failures), timeouts)
        let cases = [
            (Ended::Success, Verdict::End, (1, 0), 0),
            // a parse error is the server's answer: no retry, no failure
            (Ended::Parse, Verdict::End, (1, 0), 0),
            // a caller abort is never retried and never a sample
            (Ended::Cancelled, Verdict::End, (0, 0), 0),
            (Ended::Timeout, retry, (1, 1), 1),
            (Ended::Network { offline: false }, retry, (1, 1), 0),
            // offline: retried (the engine waits for `online`), no sample
            (Ended::Network { offline: true }, retry, (0, 0), 0),
            (UNAVAILABLE, retry, (1, 1), 0),
            (status(500), retry, (1, 1), 0),
            // not a failure status: an answer, no retry
            (
                status(404),
                Verdict::Fail {
                    denied: RetryDenied::Status,
                },
                (1, 0),
                0,
            ),
            (
                status(401),
                Verdict::Fail {
                    denied: RetryDenied::Status,
                },
                (1, 0),
                0,
            ),
        ];
        for (end, verdict, sampled, timeouts) in cases {
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, "GET"), 0.0);
            let s = send(&mut g, &mut c, 0.0);
            let decides = g.decides(&end);
            assert_eq!(settle(&mut g, &mut c, &s, end, 1.0), verdict, "{end:?}");
            assert_eq!(window(&mut g, 1.0), sampled, "{end:?}");
            assert_eq!(g.stats.timeouts, timeouts, "{end:?}");
            assert_eq!(g.in_flight(), 0);
            // only a failure another hedge leg could improve on leaves a
            // round open
            assert_eq!(
                decides,
                !matches!(verdict, Verdict::Retry { .. }),
                "{end:?}"
            );
        }
    }

    #[test]
    fn a_get_whose_network_error_repeats_on_every_attempt_leaves_the_next_calls_admitted() {
        // WPT fetch/api (cors-*, redirect-location): a GET the host fails
        // with a network error every time (a CORS failure, a redirect to a
        // URL with credentials or to an invalid location) is retried
        // twice. Its own 3 network errors open nothing: the test's next,
        // valid calls to the same path go (twice over, as the tests go).
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut now = 0.0;
        for round in 0..2 {
            let mut c = g.start(spec(&cc, "GET"), now);
            loop {
                let s = send(&mut g, &mut c, now);
                let end = Ended::Network { offline: false };
                match settle(&mut g, &mut c, &s, end, now) {
                    Verdict::Retry { delay_ms } => now += delay_ms,
                    other => {
                        assert!(matches!(other, Verdict::Fail { .. }), "{other:?}");
                        break;
                    }
                }
            }
            assert_eq!(c.attempts(), 3, "round {round}: retried twice");
            assert!(g.drain_transitions().is_empty(), "round {round}: opened");
            let mut ok = g.start(spec(&cc, "GET"), now);
            let s = send(&mut g, &mut ok, now);
            assert_eq!(
                settle(&mut g, &mut ok, &s, Ended::Success, now),
                Verdict::End
            );
            // the next round's retries in a fresh budget window
            now += 10_000.0;
        }
        // Every attempt was a sample (the failure rate counts them).
        assert_eq!(window(&mut g, now), (8, 6));
        assert_eq!(g.stats.breaker_opens, 0);
        // A status is the server's: one call's three 503s open it, as before.
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let mut now = 0.0;
        while let Verdict::Retry { delay_ms } = {
            let s = send(&mut g, &mut c, now);
            settle(&mut g, &mut c, &s, UNAVAILABLE, now)
        } {
            now += delay_ms;
        }
        assert_eq!(c.attempts(), 3);
        let t = g.drain_transitions();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].to, BreakerState::Open);
    }

    #[test]
    fn a_rejection_the_request_itself_may_cause_is_no_sample_and_not_retried() {
        // `redirect: 'error'`, an `integrity`, `cache: 'only-if-cached'`:
        // the host's refusal reads as a network error. Three in a row open
        // the breaker of an ordinary request; these leave it empty.
        let client = cfg();
        let cc = call_cfg(&client);
        let own = &*Box::leak(Box::new(Spec {
            refusable: true,
            ..spec(&cc, "GET").clone()
        }));
        let mut g = Guard::new(&client);
        for i in 0..5 {
            let now = f64::from(i);
            let mut c = g.start(own, now);
            let s = send(&mut g, &mut c, now);
            let end = Ended::Network { offline: false };
            assert_eq!(settle(&mut g, &mut c, &s, end, now), Verdict::End);
        }
        assert_eq!(window(&mut g, 5.0), (0, 0));
        assert_eq!(g.stats.retries, 0);
        assert_eq!(g.next_half_open(), None, "never opened");
        // A hedge leg refused so: no sample either.
        let mut c = g.start(own, 6.0);
        let s = send(&mut g, &mut c, 6.0);
        let end = Ended::Network { offline: false };
        g.leg_failed(&mut c, s.permit, &end, None, 6.0, 0.0);
        assert_eq!(window(&mut g, 6.0), (0, 0));
        // Its answers and timeouts still count as any request's.
        let mut c = g.start(own, 7.0);
        let s = send(&mut g, &mut c, 7.0);
        let retry = Verdict::Retry { delay_ms: 1000.0 };
        assert_eq!(settle(&mut g, &mut c, &s, UNAVAILABLE, 7.0), retry);
        assert_eq!(window(&mut g, 7.0), (1, 1));
        // The same failure of an ordinary request is a sample, retried.
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let end = Ended::Network { offline: false };
        assert_eq!(settle(&mut g, &mut c, &s, end, 0.0), retry);
        assert_eq!(window(&mut g, 0.0), (1, 1));
    }

    #[test]
    fn an_abort_at_any_stage_leaves_no_slot_no_probe_and_no_sample() {
        let mut client = cfg();
        client.concurrency = Some(LimiterConfig { max: 1, queue: 10 });
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);

        // Queued behind a call in flight, then aborted: out of the queue,
        // and the slot the first call frees goes to nobody.
        let mut first = g.start(spec(&cc, "GET"), 0.0);
        let s1 = send(&mut g, &mut first, 0.0);
        let mut queued = g.start(spec(&cc, "GET"), 0.0);
        assert!(matches!(
            g.admit(&mut queued, 0.0, false, 0.5),
            Admission::Go(_)
        ));
        let Acquire::Queued(id) = g.acquire_slot() else {
            panic!("not queued")
        };
        assert_eq!(g.queued(), 1);
        assert!(g.leave_queue(id), "still queued when it left");
        assert_eq!(g.queued(), 0);
        assert_eq!(g.release_slot(), None);
        assert_eq!(g.in_flight(), 0);
        // (the first call's own end, so its breaker sample is in)
        settle(&mut g, &mut first, &s1, Ended::Success, 1.0);

        // Granted just as it gave up: leave_queue says so, and the caller
        // passes the slot on.
        let s1 = send(&mut g, &mut first, 2.0);
        let Acquire::Queued(id) = g.acquire_slot() else {
            panic!("not queued")
        };
        assert_eq!(g.release_slot(), Some(id));
        assert!(!g.leave_queue(id), "granted before it left");
        assert_eq!(g.release_slot(), None);
        assert_eq!(g.in_flight(), 0);
        settle(&mut g, &mut first, &s1, Ended::Success, 3.0);

        // Aborted during the attempt: no sample, no retry.
        let before = window(&mut g, 4.0);
        let mut c = g.start(spec(&cc, "GET"), 4.0);
        let s = send(&mut g, &mut c, 4.0);
        assert_eq!(
            settle(&mut g, &mut c, &s, Ended::Cancelled, 5.0),
            Verdict::End
        );
        assert_eq!(window(&mut g, 5.0), before);

        // Open the breaker, wait out its period: the half-open probe,
        // aborted after admission (waiting for the probe lock or a slot),
        // goes back, so the call waiting for it probes next (README,
        // "breaker.halfOpenProbes": it waits, where it was refused before).
        for i in 0..3 {
            let now = 10.0 + f64::from(i);
            let mut c = g.start(spec(&cc, "POST"), now);
            let s = send(&mut g, &mut c, now);
            settle(&mut g, &mut c, &s, UNAVAILABLE, now);
        }
        let half_open = g.next_half_open().unwrap();
        let mut probe = g.start(spec(&cc, "GET"), half_open);
        let Admission::Go(Some(permit)) = g.admit(&mut probe, half_open, false, 0.5) else {
            panic!("no probe")
        };
        assert_eq!(permit, Permit::Probe);
        let mut other = g.start(spec(&cc, "GET"), half_open);
        let Admission::AwaitProbe(waiter) = g.admit(&mut other, half_open, false, 0.5) else {
            panic!("does not wait for the probe")
        };
        let samples = window(&mut g, half_open);
        g.abandon(&probe, Some(permit), half_open);
        assert_eq!(window(&mut g, half_open), samples);
        assert_eq!(g.drain_released(), [waiter]);
        assert!(matches!(
            g.admit(&mut other, half_open + 1.0, false, 0.5),
            Admission::Go(Some(Permit::Probe))
        ));

        // Aborted in the backoff after a failure: its slot went back when
        // the attempt ended, so the guard holds nothing for it.
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert!(matches!(
            settle(&mut g, &mut c, &s, Ended::Timeout, 1.0),
            Verdict::Retry { .. }
        ));
        assert_eq!((g.in_flight(), g.queued()), (0, 0));
        assert_eq!(g.acquire_slot(), Acquire::Granted);
    }

    /// Where a modelled caller is in the loop.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Stage {
        Admit,
        Queued(WaiterId, Option<Permit>),
        /// A freed slot was handed to it while queued.
        Granted(Option<Permit>),
        Running(Option<Permit>),
        Backoff(f64),
        /// Waiting for the half-open key's probe.
        AwaitProbe(ProbeWaiter),
        Done,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Start,
        /// Moves call `n % calls` on; a running attempt ends as `end` says.
        Step(usize, u8),
        Abort(usize),
        Tick(u16),
    }

    fn end_of(n: u8) -> Ended<'static> {
        match n % 6 {
            0 => Ended::Success,
            1 => Ended::Timeout,
            2 => Ended::Network { offline: false },
            3 => UNAVAILABLE,
            4 => Ended::Status {
                status: 404,
                retry_after: None,
                reset_ms: None,
            },
            _ => Ended::Parse,
        }
    }

    /// Drives the guard as the engine does, with callers that start, move
    /// on, fail, retry and abort in any order, and checks after every step
    /// that what the guard counts is what the callers hold.
    struct Model {
        g: Guard,
        calls: Vec<(CallState<'static>, Stage)>,
        cc: CallConfig,
        now: f64,
    }

    impl Model {
        /// A freed slot: to the queued call it is handed to, if any.
        fn release(&mut self) {
            if let Some(id) = self.g.release_slot() {
                let (_, stage) = self
                    .calls
                    .iter_mut()
                    .find(|(_, s)| matches!(s, Stage::Queued(w, _) if *w == id))
                    .expect("handed to a queued call");
                let Stage::Queued(_, permit) = *stage else {
                    unreachable!()
                };
                *stage = Stage::Granted(permit);
            }
        }

        /// Probe waiters released: each asks `admit` again, as the engine
        /// wakes them after every decision.
        fn wake(&mut self) {
            for id in self.g.drain_released() {
                let (_, stage) = self
                    .calls
                    .iter_mut()
                    .find(|(_, s)| *s == Stage::AwaitProbe(id))
                    .expect("released a waiting call");
                *stage = Stage::Admit;
            }
        }

        fn begin(&mut self, i: usize, permit: Option<Permit>) {
            let now = self.now;
            let (c, _) = &mut self.calls[i];
            let next = match self.g.begin(c, permit, now) {
                Some(_) => Stage::Running(permit),
                None => Stage::Done,
            };
            self.calls[i].1 = next;
            if next == Stage::Done {
                self.release();
                self.unsent(i);
            }
        }

        /// The call ends without sending the retry it may have been
        /// granted: the engine gives it back, as its driver does.
        fn unsent(&mut self, i: usize) {
            self.g.retry_unsent(&mut self.calls[i].0);
        }

        fn step(&mut self, i: usize, end: u8) {
            let now = self.now;
            match self.calls[i].1 {
                Stage::Backoff(until) if now >= until => {
                    self.calls[i].1 = Stage::Admit;
                    self.step(i, end);
                }
                Stage::Admit => {
                    let c = &mut self.calls[i].0;
                    match self.g.admit(c, now, false, 0.5) {
                        Admission::Go(permit) => match self.g.acquire_slot() {
                            Acquire::Granted => self.begin(i, permit),
                            Acquire::Queued(id) => self.calls[i].1 = Stage::Queued(id, permit),
                            Acquire::Full => {
                                let c = &self.calls[i].0;
                                self.g.abandon(c, permit, now);
                                self.calls[i].1 = Stage::Done;
                                self.unsent(i);
                            }
                        },
                        Admission::Wait { ms, .. } => self.calls[i].1 = Stage::Backoff(now + ms),
                        Admission::AwaitProbe(id) => self.calls[i].1 = Stage::AwaitProbe(id),
                        Admission::Online => unreachable!("never offline here"),
                        Admission::Stop(_) => {
                            self.calls[i].1 = Stage::Done;
                            self.unsent(i);
                        }
                    }
                }
                Stage::Granted(permit) => self.begin(i, permit),
                Stage::Running(permit) => {
                    self.release();
                    let c = &mut self.calls[i].0;
                    let v = self.g.settle(c, permit, &end_of(end), None, now, 0.0, 0.5);
                    self.calls[i].1 = match v {
                        Verdict::Retry { delay_ms } => Stage::Backoff(now + delay_ms),
                        Verdict::End | Verdict::Fail { .. } => Stage::Done,
                    };
                }
                Stage::Queued(..) | Stage::Backoff(_) | Stage::AwaitProbe(_) | Stage::Done => {}
            }
            self.wake();
        }

        fn abort(&mut self, i: usize) {
            let now = self.now;
            match self.calls[i].1 {
                Stage::Queued(id, permit) => {
                    assert!(self.g.leave_queue(id), "a queued call is still queued");
                    self.g.abandon(&self.calls[i].0, permit, now);
                }
                Stage::Granted(permit) => {
                    self.release();
                    self.g.abandon(&self.calls[i].0, permit, now);
                }
                Stage::Running(permit) => {
                    self.release();
                    let c = &mut self.calls[i].0;
                    let v = self
                        .g
                        .settle(c, permit, &Ended::Cancelled, None, now, 0.0, 0.5);
                    assert_eq!(v, Verdict::End, "an abort is never retried");
                }
                // An abort or the deadline ends the wait.
                Stage::AwaitProbe(id) => self.g.stop_waiting(&self.calls[i].0, id),
                Stage::Admit | Stage::Backoff(_) | Stage::Done => {}
            }
            self.calls[i].1 = Stage::Done;
            self.unsent(i);
            self.wake();
        }

        fn check(&self, max: u32) {
            let holding = self
                .calls
                .iter()
                .filter(|(_, s)| matches!(s, Stage::Granted(_) | Stage::Running(_)))
                .count();
            let queued = self
                .calls
                .iter()
                .filter(|(_, s)| matches!(s, Stage::Queued(..)))
                .count();
            assert_eq!(self.g.in_flight() as usize, holding, "slots held");
            assert_eq!(self.g.queued() as usize, queued, "queue");
            assert!(self.g.in_flight() <= max);
            let attempts: u64 = self
                .calls
                .iter()
                .map(|(c, _)| u64::from(c.attempts()))
                .sum();
            assert_eq!(self.g.stats.attempts, attempts);
            // `retries` counts the retries sent, and a retry granted but
            // not yet sent (one per call between its attempts; a retry the
            // budget denied counts only once its burst lets it go).
            let sent: u64 = self
                .calls
                .iter()
                .map(|(c, _)| u64::from(c.attempts().saturating_sub(1)))
                .sum();
            let between = self
                .calls
                .iter()
                .filter(|(c, s)| c.attempts() > 0 && !matches!(s, Stage::Running(_) | Stage::Done))
                .count() as u64;
            let retries = self.g.stats.retries;
            assert!(
                sent <= retries && retries <= sent + between,
                "retries {retries}, sent {sent}"
            );
            assert_eq!(self.g.stats.requests, self.calls.len() as u64);
            for (c, _) in &self.calls {
                assert!(c.attempts() <= 3, "maxAttempts");
            }
            // Calls waiting for a half-open probe: as many as the guard
            // holds, and never stranded (a probe permit is out).
            let waiting = self
                .calls
                .iter()
                .filter(|(_, s)| matches!(s, Stage::AwaitProbe(_)))
                .count();
            assert_eq!(self.g.probe_waiters(), waiting, "probe waiters");
            let probing = self.calls.iter().any(|(_, s)| {
                matches!(
                    s,
                    Stage::Queued(_, Some(Permit::Probe))
                        | Stage::Granted(Some(Permit::Probe))
                        | Stage::Running(Some(Permit::Probe))
                )
            });
            assert!(waiting == 0 || probing, "waiting with no probe out");
        }
    }

    proptest! {
        #[test]
        fn any_interleaving_of_calls_keeps_slots_queue_and_counts_true(
            max in 1..4u32,
            queue in 0..4u32,
            ops in prop::collection::vec(prop_oneof![
                Just(Op::Start),
                (0..64usize, 0..6u8).prop_map(|(n, e)| Op::Step(n, e)),
                (0..64usize).prop_map(Op::Abort),
                (0..3000u16).prop_map(Op::Tick),
            ], 1..300),
        ) {
            let mut client = cfg();
            client.concurrency = Some(LimiterConfig { max, queue });
            let cc = call_cfg(&client);
            let mut m = Model { g: Guard::new(&client), calls: Vec::new(), cc, now: 0.0 };
            for op in ops {
                match op {
                    Op::Start => {
                        let c = m.g.start(spec(&m.cc, "GET"), m.now);
                        m.calls.push((c, Stage::Admit));
                    }
                    Op::Step(n, e) if !m.calls.is_empty() => m.step(n % m.calls.len(), e),
                    Op::Abort(n) if !m.calls.is_empty() => m.abort(n % m.calls.len()),
                    Op::Tick(ms) => m.now += f64::from(ms),
                    _ => {}
                }
                m.check(max);
            }
            for i in 0..m.calls.len() {
                m.abort(i);
            }
            m.check(max);
            prop_assert_eq!((m.g.in_flight(), m.g.queued()), (0, 0));
        }
    }

    #[test]
    fn a_retry_after_holds_the_key_for_every_call_and_the_other_tabs() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let end = Ended::Status {
            status: 503,
            retry_after: Some("3"),
            reset_ms: None,
        };
        assert_eq!(
            settle(&mut g, &mut c, &s, end, 0.0),
            Verdict::Retry { delay_ms: 3000.0 }
        );
        let holds = g.drain_holds();
        assert_eq!(holds.len(), 1);
        assert_eq!(
            (holds[0].key.as_str(), holds[0].wait_ms, holds[0].quota),
            (KEY, 3000.0, false)
        );
        // another call waits, announced once per reason
        let mut other = g.start(spec(&cc, "GET"), 0.0);
        let first = g.admit(&mut other, 1000.0, false, 0.5);
        assert_eq!(
            first,
            Admission::Wait {
                ms: 2000.0,
                why: Why::RetryAfter,
                announce: true
            }
        );
        let again = g.admit(&mut other, 2000.0, false, 0.5);
        assert_eq!(
            again,
            Admission::Wait {
                ms: 1000.0,
                why: Why::RetryAfter,
                announce: false
            }
        );
        assert!(matches!(
            g.admit(&mut other, 3000.0, false, 0.5),
            Admission::Go(_)
        ));
        // a call whose deadline ends before the hold fails at once
        let mut short = cc.clone();
        short.deadline_ms = 500.0;
        let mut g2 = Guard::new(&client);
        g2.peer_hold(KEY, Credentials::NONE, 3000.0, false, 0.0);
        let mut c2 = g2.start(spec(&short, "GET"), 0.0);
        assert_eq!(
            g2.admit(&mut c2, 0.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen {
                retry_in_ms: 3000.0
            })
        );
    }

    /// The credentials of a call that sends `Cookie: value`.
    fn cookie(value: &str) -> Credentials {
        Credentials::of(|name| (name == "cookie").then(|| value.to_owned()))
    }

    /// A GET of KEY sent with `who`, started at `now`.
    fn call_as<'a>(g: &mut Guard, cc: &'a CallConfig, who: Credentials, now: f64) -> CallState<'a> {
        let mut c = g.start(spec(cc, "GET"), now);
        c.set_credentials(who);
        c
    }

    #[test]
    fn a_hold_binds_only_the_calls_of_its_credentials_breakers_bind_all() {
        let client = cfg();
        let cc = call_cfg(&client);
        let (mallory, bob) = (cookie("sid=mallory"), cookie("sid=bob"));
        let mut g = Guard::new(&client);
        // mallory's per-user 429 Retry-After: 20
        let mut m = call_as(&mut g, &cc, mallory, 0.0);
        let s = send(&mut g, &mut m, 0.0);
        let refused = Ended::Status {
            status: 429,
            retry_after: Some("20"),
            reset_ms: None,
        };
        settle(&mut g, &mut m, &s, refused, 0.0);
        let holds = g.drain_holds();
        assert_eq!(holds.len(), 1);
        assert_eq!((holds[0].who, holds[0].wait_ms), (mallory, 20_000.0));
        // bob, and a call without credentials, go at once
        let mut b = call_as(&mut g, &cc, bob, 10.0);
        assert!(matches!(
            g.admit(&mut b, 10.0, false, 0.5),
            Admission::Go(_)
        ));
        let mut anon = call_as(&mut g, &cc, Credentials::NONE, 10.0);
        assert!(matches!(
            g.admit(&mut anon, 10.0, false, 0.5),
            Admission::Go(_)
        ));
        // mallory's next call is held
        let mut m2 = call_as(&mut g, &cc, mallory, 10.0);
        assert_eq!(
            g.admit(&mut m2, 10.0, false, 0.5),
            Admission::Wait {
                ms: 19_990.0,
                why: Why::RetryAfter,
                announce: true
            }
        );

        // her spent per-token quota (`RateLimit: "user";r=0;t=25`) holds
        // only her calls too, and only hers are told to the other tabs
        let mut g = Guard::new(&client);
        let mut m = call_as(&mut g, &cc, mallory, 0.0);
        let s = send(&mut g, &mut m, 0.0);
        let spent = Quota {
            remaining: 0,
            reset_ms: Some(25_000.0),
            quota: None,
            window_ms: None,
        };
        let _ = g.release_slot();
        g.settle(
            &mut m,
            s.permit,
            &Ended::Success,
            Some(&spent),
            0.0,
            0.0,
            0.5,
        );
        let holds = g.drain_holds();
        assert_eq!((holds[0].who, holds[0].quota), (mallory, true));
        let mut b = call_as(&mut g, &cc, bob, 10.0);
        assert!(matches!(
            g.admit(&mut b, 10.0, false, 0.5),
            Admission::Go(_)
        ));
        let mut m2 = call_as(&mut g, &cc, mallory, 10.0);
        assert!(matches!(
            g.admit(&mut m2, 10.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { .. })
        ));

        // another tab's hold binds the calls of its credentials alone
        let mut g = Guard::new(&client);
        g.peer_hold(KEY, mallory, 5000.0, false, 0.0);
        let mut b = call_as(&mut g, &cc, bob, 0.0);
        assert!(matches!(g.admit(&mut b, 0.0, false, 0.5), Admission::Go(_)));
        let mut m = call_as(&mut g, &cc, mallory, 0.0);
        assert!(matches!(
            g.admit(&mut m, 0.0, false, 0.5),
            Admission::Wait { why: Why::Peer, .. }
        ));

        // the breaker stays per key: mallory's failures open it for bob
        let mut g = Guard::new(&client);
        for i in 0..3 {
            let now = f64::from(i);
            let mut m = call_as(&mut g, &cc, mallory, now);
            let s = send(&mut g, &mut m, now);
            settle(&mut g, &mut m, &s, UNAVAILABLE, now);
        }
        let mut b = call_as(&mut g, &cc, bob, 10.0);
        assert!(matches!(
            g.admit(&mut b, 10.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { .. })
        ));
    }

    #[test]
    fn a_hold_lasts_at_most_the_clients_own_cap() {
        let refused = |secs| Ended::Status {
            status: 429,
            retry_after: Some(secs),
            reset_ms: None,
        };
        // A call allowed to wait 2^31-1 ms given Retry-After: 86400 waits
        // (or gives up) by its own options; the others are held for the
        // client's default cap, 30 s, not a day.
        let client = cfg();
        let cc = call_cfg(&client);
        let mut patient = cc.clone();
        if let Some(r) = patient.retry.as_mut() {
            r.max_retry_after_ms = 2_147_483_647.0;
        }
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&patient, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        // (86400 s is beyond its 20 s deadline: it gives up)
        assert_eq!(
            settle(&mut g, &mut c, &s, refused("86400"), 0.0),
            Verdict::Fail {
                denied: RetryDenied::Deadline
            }
        );
        assert_eq!(g.drain_holds()[0].wait_ms, 30_000.0);
        let mut other = g.start(spec(&cc, "GET"), 0.0);
        assert_eq!(
            g.admit(&mut other, 0.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen {
                retry_in_ms: 30_000.0
            })
        );

        // A `retry: false` call on a client capped at 1000 ms given
        // Retry-After: 25 holds the others for 1000 ms, not 25 s.
        let mut capped = cfg();
        if let Some(r) = capped.retry.as_mut() {
            r.max_retry_after_ms = 1000.0;
        }
        let cc = call_cfg(&capped);
        let mut once = cc.clone();
        once.retry = None;
        let mut g = Guard::new(&capped);
        let mut c = g.start(spec(&once, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        settle(&mut g, &mut c, &s, refused("25"), 0.0);
        assert_eq!(g.drain_holds()[0].wait_ms, 1000.0);
        let mut other = g.start(spec(&cc, "GET"), 0.0);
        assert_eq!(
            g.admit(&mut other, 0.0, false, 0.5),
            Admission::Wait {
                ms: 1000.0,
                why: Why::RetryAfter,
                announce: true
            }
        );
        // The same for a refusal's rate-limit reset, and a call's own
        // retryAfter: false does not keep the others from being held.
        let mut deaf = cc.clone();
        if let Some(r) = deaf.retry.as_mut() {
            r.retry_after = false;
        }
        let mut g = Guard::new(&capped);
        let mut c = g.start(spec(&deaf, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let reset = Ended::Status {
            status: 429,
            retry_after: None,
            reset_ms: Some(25_000.0),
        };
        settle(&mut g, &mut c, &s, reset, 0.0);
        let mut other = g.start(spec(&cc, "GET"), 0.0);
        assert!(matches!(
            g.admit(&mut other, 0.0, false, 0.5),
            Admission::Wait { ms, .. } if ms == 1000.0
        ));
        // A client that does not honour Retry-After sets no hold.
        let mut ignoring = cfg();
        if let Some(r) = ignoring.retry.as_mut() {
            r.retry_after = false;
        }
        let cc = call_cfg(&ignoring);
        let mut g = Guard::new(&ignoring);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        settle(&mut g, &mut c, &s, refused("25"), 0.0);
        assert!(g.drain_holds().is_empty());
    }

    #[test]
    fn offline_deadline_and_schema_fail_fast() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        assert_eq!(g.admit(&mut c, 0.0, true, 0.5), Admission::Online);
        assert_eq!(
            g.admit(&mut c, 20_000.0, false, 0.5),
            Admission::Stop(Stop::Deadline)
        );
        let mut schema = spec(&cc, "GET").clone();
        schema.prefer_cache = true;
        let mut c = g.start(&schema, 0.0);
        assert_eq!(
            g.admit(&mut c, 0.0, true, 0.5),
            Admission::Stop(Stop::Offline)
        );
        g.peer_hold(KEY, Credentials::NONE, 1000.0, false, 0.0);
        assert!(matches!(
            g.admit(&mut c, 0.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { .. })
        ));
        // a slot that came at the deadline: no attempt, the permit given back
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        assert!(g.begin(&mut c, None, 20_000.0).is_none());
        assert_eq!(c.attempts(), 0);
        // the deadline shortens the last attempt's timeout
        let s = g.begin(&mut c, None, 17_000.0).unwrap();
        assert_eq!((s.phase, s.timeout_ms), (Phase::Deadline, 3000.0));
    }

    #[test]
    fn the_breaker_opens_after_three_failures_and_refuses() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        for i in 0..3 {
            let now = f64::from(i);
            let mut c = g.start(spec(&cc, "POST"), now);
            let s = send(&mut g, &mut c, now);
            settle(&mut g, &mut c, &s, UNAVAILABLE, now);
        }
        let t = g.drain_transitions();
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].from, t[0].to),
            (BreakerState::Closed, BreakerState::Open)
        );
        assert_eq!(g.stats.breaker_opens, 1);
        let mut c = g.start(spec(&cc, "GET"), 10.0);
        assert!(matches!(
            g.admit(&mut c, 10.0, false, 0.5),
            Admission::Stop(Stop::CircuitOpen { retry_in_ms }) if retry_in_ms > 0.0
        ));
        assert_eq!(g.next_half_open(), Some(2002.0));
        // an offline network error and an abort say nothing of the server
        let mut g = Guard::new(&client);
        for i in 0..4 {
            let now = f64::from(i);
            let mut c = g.start(spec(&cc, "POST"), now);
            let s = send(&mut g, &mut c, now);
            let end = if i % 2 == 0 {
                Ended::Network { offline: true }
            } else {
                Ended::Cancelled
            };
            settle(&mut g, &mut c, &s, end, now);
        }
        assert!(g.drain_transitions().is_empty());
    }

    #[test]
    fn a_page_loads_burst_in_an_outage_sends_one_probe_and_its_waiters_spend_attempts_unsent() {
        // The storm benchmark's page load: 6 calls over 3 endpoints of one
        // backend, all out at once, all answered 503. Each endpoint sees
        // only 2 failures (nothing opens), but the run spans the origin:
        // a burst. One retry goes as the origin's probe when a first retry
        // typically goes (no jitter here: 1000 ms after the failures), the
        // others wait for it; it fails, and each waiter counts it as one of
        // its attempts without sending.
        let mut client = cfg();
        client.budget = None;
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut calls = page_fails(&mut g, &cc);
        assert_eq!(g.drain_transitions(), [], "nothing opens");
        // Before the probe's time: wait for it (never announced).
        let mut early = g.start(calls[2].spec, 500.0);
        assert!(matches!(
            g.admit(&mut early, 500.0, false, 0.5),
            Admission::Wait { ms, why: Why::Burst, announce: false } if ms == 505.0
        ));
        let t = 1005.0;
        let probe = probe_goes(&mut g, &mut calls, t);
        assert_eq!(g.stats.attempts, 7);
        assert!(matches!(
            settle(&mut g, &mut calls[0], &probe, UNAVAILABLE, t + 10.0),
            Verdict::Retry { .. }
        ));
        assert_eq!(g.drain_released().len(), 5);
        // The probe's endpoint failed a third time in its own row: its own
        // breaker opened, and refuses the other call to it.
        let a = g.admit(&mut calls[1], t + 10.0, false, 0.5);
        assert!(
            matches!(a, Admission::Stop(Stop::CircuitOpen { .. })),
            "{a:?}"
        );
        // Each other waiter: one attempt lost, then it waits for the next
        // probe, when a second retry typically goes (2000 ms).
        for c in calls.iter_mut().skip(2) {
            let a = g.admit(c, t + 10.0, false, 0.5);
            assert!(
                matches!(a, Admission::Wait { ms, why: Why::Burst, .. } if ms == 2000.0),
                "{a:?}"
            );
            assert_eq!(c.attempts(), 1, "nothing sent");
        }
        // The next probe fails too: the waiters' attempts run out (1 sent,
        // 2 lost): CircuitOpenError.
        let t = t + 2010.0;
        let probe = origin_probe(&mut g, &mut calls[2], t);
        let _ = settle(&mut g, &mut calls[2], &probe, UNAVAILABLE, t + 10.0);
        for i in [3, 4, 5] {
            let a = g.admit(&mut calls[i], t + 10.0, false, 0.5);
            assert!(
                matches!(a, Admission::Stop(Stop::CircuitOpen { .. })),
                "{i}: {a:?}"
            );
        }
        assert_eq!(g.stats.attempts, 8, "the page's 6 and two probes");
    }

    #[test]
    fn a_hedge_only_when_everything_allows_it() {
        let mut client = cfg();
        client.concurrency = Some(LimiterConfig { max: 2, queue: 10 });
        let mut cc = call_cfg(&client);
        cc.hedge = Some(HedgeConfig {
            after: HedgeAfter::Ms(100.0),
            max: 1,
        });
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(g.hedge_due(&c, s.started_ms, 40.0), Some(60.0));
        let h = g.hedge(&mut c, 100.0, 0.5).unwrap();
        assert_eq!((h.attempt, g.stats.retries, g.in_flight()), (2, 1, 2));
        // no slot free at once: none
        assert!(g.hedge(&mut c, 100.0, 0.5).is_none());
        // not replayable: none
        let mut post = g.start(spec(&cc, "POST"), 0.0);
        let _ = g.release_slot();
        assert!(g.hedge(&mut post, 100.0, 0.5).is_none());
        assert_eq!(g.in_flight(), 1);
        // a failed leg is a sample; a 503 does not decide the round, a 404 does
        g.leg_failed(&mut c, h.permit, &UNAVAILABLE, None, 150.0, 0.0);
        assert!(!g.decides(&UNAVAILABLE));
        assert!(g.decides(&Ended::Status {
            status: 404,
            retry_after: None,
            reset_ms: None
        }));
        // the p95 is learnt from answers
        let mut p95 = cc.clone();
        p95.hedge = Some(HedgeConfig {
            after: HedgeAfter::P95,
            max: 1,
        });
        let c = g.start(spec(&p95, "GET"), 0.0);
        assert_eq!(g.hedge_due(&c, 0.0, 0.0), None);
        for i in 0..20 {
            g.answered_in(&c, 50.0, f64::from(i));
        }
        assert_eq!(g.hedge_due(&c, 0.0, 30.0), Some(20.0));
    }

    /// A call of `cc` whose hedges go out after 50 ms, at most `max`.
    fn hedged(max_attempts: u32, max: u32) -> (ClientConfig, CallConfig) {
        let mut client = cfg();
        client.concurrency = Some(LimiterConfig { max: 8, queue: 10 });
        client.budget = None;
        client.breaker = None;
        let mut cc = call_cfg(&client);
        if let Some(r) = cc.retry.as_mut() {
            r.max_attempts = max_attempts;
        }
        cc.hedge = Some(HedgeConfig {
            after: HedgeAfter::Ms(50.0),
            max,
        });
        (client, cc)
    }

    /// Issue 27 item 4: `maxAttempts: 3, hedge: { afterMs: 50, max: 1 }`
    /// against a backend that never answers sent 4 requests, 2 of them
    /// hedges (every round hedged again). Hedges count toward
    /// `maxAttempts`, and `max` is over the whole call.
    #[test]
    fn hedges_count_toward_max_attempts_and_max_is_per_call() {
        for (max_attempts, max, sends) in [(3, 1, [2, 1]), (10, 2, [3, 1]), (2, 3, [2, 0])] {
            let (client, cc) = hedged(max_attempts, max);
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, "GET"), 0.0);
            let mut now = 0.0;
            let mut per_round = Vec::new();
            for _ in 0..2 {
                if c.attempts() == max_attempts {
                    per_round.push(0);
                    continue;
                }
                let first = send(&mut g, &mut c, now);
                let mut legs = vec![first];
                while let Some(due) = g.hedge_due(&c, legs.last().unwrap().started_ms, now) {
                    now += due.max(0.0);
                    match g.hedge(&mut c, now, 0.5) {
                        Some(h) => legs.push(h),
                        None => break,
                    }
                }
                per_round.push(legs.len());
                // Every leg times out; the last one settles the round.
                now += 6000.0;
                let last = legs.pop().unwrap();
                for leg in legs {
                    let _ = g.release_slot();
                    g.leg_failed(&mut c, leg.permit, &Ended::Timeout, None, now, 0.0);
                }
                if let Verdict::Retry { delay_ms } =
                    settle(&mut g, &mut c, &last, Ended::Timeout, now)
                {
                    now += delay_ms;
                }
            }
            let what = format!("maxAttempts {max_attempts}, hedge.max {max}");
            assert_eq!(per_round, sends, "{what}: sends per round");
            assert!(c.attempts() <= max_attempts, "{what}");
            assert!(c.hedges() <= max, "{what}");
            assert_eq!(g.stats.attempts, u64::from(c.attempts()), "{what}");
        }
        // retry: false is one attempt in all: no hedge.
        let (client, mut cc) = hedged(3, 1);
        cc.retry = None;
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(g.hedge_due(&c, s.started_ms, 0.0), None);
        assert!(g.hedge(&mut c, 50.0, 0.5).is_none());
    }

    /// Issue 27 item 4: a hedge leg answered `429 Retry-After: 10` was
    /// followed 4-17 ms later by another hedge, and another call of the
    /// key went out at once. A leg refused with a wait (Retry-After or a
    /// rate-limit reset) stops the call's hedges and holds every call of
    /// the key.
    #[test]
    fn a_leg_refused_with_a_wait_stops_hedges_and_holds_the_key() {
        let refusals = [
            (429, Some("10"), None, Some(10_000.0)),
            (503, None, Some(4000.0), Some(4000.0)),
            // beyond maxRetryAfterMs: no hedge, and a hold of the client's
            // own cap (README, "Server clients")
            (429, Some("3600"), None, Some(30_000.0)),
        ];
        for (status, retry_after, reset_ms, held) in refusals {
            let (client, cc) = hedged(10, 3);
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, "GET"), 0.0);
            let first = send(&mut g, &mut c, 0.0);
            let h = g.hedge(&mut c, 50.0, 0.5).unwrap();
            let _ = g.release_slot();
            let refused = Ended::Status {
                status,
                retry_after,
                reset_ms,
            };
            assert!(!g.decides(&refused));
            g.leg_failed(&mut c, h.permit, &refused, None, 60.0, 0.0);
            let what = format!("{status} {retry_after:?} {reset_ms:?}");
            assert_eq!(g.hedge_due(&c, 50.0, 64.0), None, "{what}");
            assert!(g.hedge(&mut c, 67.0, 0.5).is_none(), "{what}");
            assert_eq!(c.hedges(), 1);
            let mut other = g.start(spec(&cc, "GET"), 64.0);
            match (g.admit(&mut other, 64.0, false, 0.5), held) {
                (Admission::Wait { ms, why, .. }, Some(wait)) => {
                    assert_eq!((ms, why), (wait - 4.0, Why::RetryAfter), "{what}");
                    let told = g.drain_holds();
                    assert_eq!((told.len(), told[0].wait_ms), (1, wait), "{what}");
                }
                // a hold past the other call's deadline refuses it at once
                (Admission::Stop(Stop::CircuitOpen { retry_in_ms }), Some(wait)) => {
                    assert_eq!(retry_in_ms, wait - 4.0, "{what}");
                    assert_eq!(g.drain_holds().len(), 1, "{what}");
                }
                (Admission::Go(_), None) => assert!(g.drain_holds().is_empty()),
                (other, _) => panic!("{what}: {other:?}"),
            }
            // The first attempt still decides the round (and the call,
            // retried, sends no more hedges in later rounds).
            let _ = g.release_slot();
            let v = g.settle(
                &mut c,
                first.permit,
                &Ended::Timeout,
                None,
                6000.0,
                0.0,
                0.5,
            );
            assert!(matches!(v, Verdict::Retry { .. }), "{what}: {v:?}");
            assert_eq!(g.hedge_due(&c, 20_000.0, 20_000.0), None, "{what}");
        }
        // A 429 without a wait, or a 500, leaves hedging on.
        for status in [429, 500] {
            let (client, cc) = hedged(10, 3);
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, "GET"), 0.0);
            let _first = send(&mut g, &mut c, 0.0);
            let h = g.hedge(&mut c, 50.0, 0.5).unwrap();
            let _ = g.release_slot();
            let plain = Ended::Status {
                status,
                retry_after: None,
                reset_ms: None,
            };
            g.leg_failed(&mut c, h.permit, &plain, None, 60.0, 0.0);
            assert_eq!(g.hedge_due(&c, 50.0, 60.0), Some(40.0), "{status}");
        }
    }

    /// How a hedge leg ends in [`hedged_calls_keep_to_both_caps`].
    fn leg_end(n: u8) -> Ended<'static> {
        match n % 5 {
            0 => Ended::Timeout,
            1 => UNAVAILABLE,
            2 => Ended::Status {
                status: 429,
                retry_after: Some("1"),
                reset_ms: None,
            },
            3 => Ended::Network { offline: false },
            _ => Ended::Success,
        }
    }

    proptest! {
        /// Whatever the legs answer and whenever, a hedged call sends at
        /// most `maxAttempts` attempts and `hedge.max` hedges in all.
        #[test]
        fn hedged_calls_keep_to_both_caps(
            max_attempts in 1..6u32,
            max in 1..4u32,
            steps in prop::collection::vec((any::<bool>(), 0..5u8, 0..3000u16), 1..60),
        ) {
            let (client, cc) = hedged(max_attempts, max);
            let mut g = Guard::new(&client);
            let mut c = g.start(spec(&cc, "GET"), 0.0);
            let mut now = 0.0;
            let mut legs: Vec<Attempt> = Vec::new();
            let mut done = false;
            for (hedge, end, dt) in steps {
                if done {
                    break;
                }
                now += f64::from(dt);
                if legs.is_empty() {
                    match g.admit(&mut c, now, false, 0.5) {
                        Admission::Go(permit) => {
                            prop_assert_eq!(g.acquire_slot(), Acquire::Granted);
                            match g.begin(&mut c, permit, now) {
                                Some(a) => legs.push(a),
                                None => done = true,
                            }
                        }
                        Admission::Wait { .. } => {}
                        _ => done = true,
                    }
                } else if hedge {
                    if let Some(due) = g.hedge_due(&c, legs.last().unwrap().started_ms, now) {
                        if due <= 0.0 {
                            if let Some(h) = g.hedge(&mut c, now, 0.5) {
                                legs.push(h);
                            }
                        }
                    }
                } else {
                    let leg = legs.remove(0);
                    let _ = g.release_slot();
                    let e = leg_end(end);
                    if g.decides(&e) || legs.is_empty() {
                        for other in legs.drain(..) {
                            let _ = g.release_slot();
                            g.abandon(&c, other.permit, now);
                        }
                        match g.settle(&mut c, leg.permit, &e, None, now, 0.0, 0.5) {
                            Verdict::Retry { delay_ms } => now += delay_ms,
                            _ => done = true,
                        }
                    } else {
                        g.leg_failed(&mut c, leg.permit, &e, None, now, 0.0);
                    }
                }
                prop_assert!(c.attempts() <= max_attempts, "{} attempts", c.attempts());
                prop_assert!(c.hedges() <= max, "{} hedges", c.hedges());
                prop_assert_eq!(g.in_flight() as usize, legs.len());
            }
        }
    }

    #[test]
    fn a_spent_quota_is_told_and_waited_out() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let spent = Quota {
            remaining: 0,
            reset_ms: Some(2000.0),
            quota: Some(10),
            window_ms: None,
        };
        let _ = g.release_slot();
        assert_eq!(
            g.settle(
                &mut c,
                s.permit,
                &Ended::Success,
                Some(&spent),
                0.0,
                0.0,
                0.5
            ),
            Verdict::End
        );
        let holds = g.drain_holds();
        assert_eq!(
            (holds.len(), holds[0].quota, holds[0].wait_ms),
            (1, true, 2000.0)
        );
        let mut next = g.start(spec(&cc, "GET"), 100.0);
        assert_eq!(
            g.admit(&mut next, 100.0, false, 0.5),
            Admission::Wait {
                ms: 1900.0,
                why: Why::Quota,
                announce: true
            }
        );
        // a call that does not obey rate limits is not held
        let mut free = cc.clone();
        free.rate_limit = false;
        let mut c = g.start(spec(&free, "GET"), 100.0);
        assert!(matches!(
            g.admit(&mut c, 100.0, false, 0.5),
            Admission::Go(_)
        ));
    }

    const UNAUTHORIZED: Ended<'static> = Ended::Status {
        status: 401,
        retry_after: None,
        reset_ms: None,
    };

    #[test]
    fn a_401_is_replayed_once_for_any_method_and_is_neither_retry_nor_sample() {
        let mut client = cfg();
        client.budget = Some(crate::policy::options::BudgetConfig {
            ratio: 0.0,
            min_retries: 0,
            window_ms: 10_000.0,
        });
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        // POST without a key: never retried, but a 401 replay is made
        let mut c = g.start(spec(&cc, "POST"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let _ = g.release_slot();
        assert!(g.replay(&mut c, s.permit, None, 1.0));
        assert_eq!(window(&mut g, 1.0), (0, 0), "the 401 is no sample");
        let s = send(&mut g, &mut c, 2.0);
        assert_eq!(s.attempt, 2);
        let _ = g.release_slot();
        // a second 401: no second replay; it settles as an answer
        assert!(!g.replay(&mut c, s.permit, None, 3.0));
        assert_eq!(
            g.settle(&mut c, s.permit, &UNAUTHORIZED, None, 3.0, 0.0, 0.5),
            Verdict::Fail {
                denied: RetryDenied::Status
            }
        );
        assert_eq!(window(&mut g, 3.0), (1, 0));
        assert_eq!(
            (g.stats.attempts, g.stats.retries, g.stats.budget_denied),
            (2, 0, 0)
        );

        // the replay spends no maxAttempts: 401, replay, 503, retry (2 of 2)
        let mut two = call_cfg(&cfg());
        if let Some(r) = two.retry.as_mut() {
            r.max_attempts = 2;
        }
        let mut g = Guard::new(&cfg());
        let mut c = g.start(spec(&two, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let _ = g.release_slot();
        assert!(g.replay(&mut c, s.permit, None, 0.0));
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(
            settle(&mut g, &mut c, &s, UNAVAILABLE, 0.0),
            Verdict::Retry { delay_ms: 1000.0 }
        );
        let s = send(&mut g, &mut c, 1000.0);
        assert_eq!(
            settle(&mut g, &mut c, &s, UNAVAILABLE, 1000.0),
            Verdict::Fail {
                denied: RetryDenied::Attempts
            }
        );
        assert_eq!((c.attempts(), g.stats.retries), (3, 1));

        // none once the deadline has passed
        let mut g = Guard::new(&cfg());
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let _ = g.release_slot();
        assert!(!g.replay(&mut c, s.permit, None, 20_000.0));
    }

    /// No breaker, and a budget of one retry in all (no ratio).
    fn one_retry_budget() -> ClientConfig {
        let mut client = cfg();
        client.breaker = None;
        client.budget = Some(crate::policy::options::BudgetConfig {
            ratio: 0.0,
            min_retries: 1,
            window_ms: 10_000.0,
        });
        client
    }

    #[test]
    fn a_hook_veto_stops_the_retry_uncounted_and_gives_its_budget_back() {
        let client = one_retry_budget();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(
            settle(&mut g, &mut c, &s, UNAVAILABLE, 0.0),
            Verdict::Retry { delay_ms: 1000.0 }
        );
        assert_eq!(
            g.veto_retry(&mut c),
            Verdict::Fail {
                denied: RetryDenied::Hook
            }
        );
        assert_eq!(g.stats.retries, 0);
        // the one retry of the budget is there for the next call
        let mut next = g.start(spec(&cc, "GET"), 10.0);
        let s = send(&mut g, &mut next, 10.0);
        assert_eq!(
            settle(&mut g, &mut next, &s, UNAVAILABLE, 10.0),
            Verdict::Retry { delay_ms: 1000.0 }
        );
        assert_eq!((g.stats.retries, g.stats.budget_denied), (1, 0));
        // a veto after anything but a granted retry hands nothing back
        let mut third = g.start(spec(&cc, "GET"), 20.0);
        let s = send(&mut g, &mut third, 20.0);
        assert_eq!(
            settle(&mut g, &mut third, &s, UNAVAILABLE, 20.0),
            Verdict::Fail {
                denied: RetryDenied::Budget
            }
        );
        g.veto_retry(&mut third);
        assert_eq!(g.stats.retries, 1);
    }

    #[test]
    fn the_predicate_is_asked_of_retryable_failures_and_its_true_still_spends_budget() {
        let client = one_retry_budget();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let not_found = Ended::Status {
            status: 404,
            retry_after: None,
            reset_ms: None,
        };
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert!(g.asks_predicate(&c, &not_found) && g.asks_predicate(&c, &Ended::Timeout));
        assert!(!g.asks_predicate(&c, &Ended::Cancelled) && !g.asks_predicate(&c, &Ended::Success));
        c.predicate_said(Some(true));
        assert_eq!(
            settle(&mut g, &mut c, &s, not_found, 0.0),
            Verdict::Retry { delay_ms: 1000.0 }
        );
        // its answer is for one attempt: the next 404 is the policy's again
        let s = send(&mut g, &mut c, 1000.0);
        assert_eq!(
            settle(&mut g, &mut c, &s, not_found, 1000.0),
            Verdict::Fail {
                denied: RetryDenied::Status
            }
        );
        // true cannot spend a budget that is spent
        let mut next = g.start(spec(&cc, "GET"), 2000.0);
        let s = send(&mut g, &mut next, 2000.0);
        next.predicate_said(Some(true));
        assert_eq!(
            settle(&mut g, &mut next, &s, not_found, 2000.0),
            Verdict::Fail {
                denied: RetryDenied::Budget
            }
        );
        // false: a 503 is not retried
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        c.predicate_said(Some(false));
        assert_eq!(
            settle(&mut g, &mut c, &s, UNAVAILABLE, 0.0),
            Verdict::Fail {
                denied: RetryDenied::Predicate
            }
        );
        assert_eq!(g.stats.retries, 0);
        // never asked of a POST without a key, nor with no attempts left
        let mut post = g.start(spec(&cc, "POST"), 0.0);
        let _ = send(&mut g, &mut post, 0.0);
        assert!(!g.asks_predicate(&post, &UNAVAILABLE));
        let once = CallConfig {
            retry: None,
            ..cc.clone()
        };
        let mut c = g.start(spec(&once, "GET"), 0.0);
        let _ = send(&mut g, &mut c, 0.0);
        assert!(!g.asks_predicate(&c, &UNAVAILABLE));
    }

    /// A call started at `at` whose 503 was granted a retry, and that
    /// retry's attempt, sent 1 s later (the backoff of `cfg()`).
    fn retry_sent<'a>(g: &mut Guard, cc: &'a CallConfig, at: f64) -> (CallState<'a>, Attempt) {
        let mut c = g.start(spec(cc, "GET"), at);
        let s = send(g, &mut c, at);
        let granted = settle(g, &mut c, &s, UNAVAILABLE, at);
        assert_eq!(granted, Verdict::Retry { delay_ms: 1000.0 });
        let s = send(g, &mut c, at + 1000.0);
        (c, s)
    }

    #[test]
    fn a_retry_the_call_never_sends_is_uncounted_and_its_budget_given_back() {
        let client = one_retry_budget();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let retry = Verdict::Retry { delay_ms: 1000.0 };
        // Granted, then the call ends in its backoff (an abort, the
        // deadline, a breaker that opened): the engine hands it back.
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        assert_eq!(settle(&mut g, &mut c, &s, UNAVAILABLE, 0.0), retry);
        assert_eq!(g.stats.retries, 1);
        g.retry_unsent(&mut c);
        g.retry_unsent(&mut c);
        assert_eq!((g.stats.retries, g.stats.attempts), (0, 1));
        // The budget's one retry is there for the next call, which sends
        // it: that one stays counted when the call ends.
        let (mut next, s) = retry_sent(&mut g, &cc, 10.0);
        let _ = settle(&mut g, &mut next, &s, UNAVAILABLE, 1010.0);
        g.retry_unsent(&mut next);
        assert_eq!((g.stats.retries, g.stats.attempts), (1, 3));

        // A retry whose beforeRequest hook failed before it went out was
        // not made either; one answered with a 401 and replayed was.
        let mut g = Guard::new(&client);
        let (mut c, s) = retry_sent(&mut g, &cc, 0.0);
        let unsent = Ended::Hook { sent: false };
        assert_eq!(settle(&mut g, &mut c, &s, unsent, 1000.0), Verdict::End);
        g.retry_unsent(&mut c);
        assert_eq!((g.stats.retries, g.stats.attempts), (0, 1));
        let (mut c, s) = retry_sent(&mut g, &cc, 2000.0);
        let _ = g.release_slot();
        assert!(g.replay(&mut c, s.permit, None, 3000.0));
        g.retry_unsent(&mut c);
        assert_eq!((g.stats.retries, g.stats.attempts), (1, 3));
    }

    #[test]
    fn a_failed_hook_ends_the_call_without_a_sample_and_uncounted_if_unsent() {
        let client = cfg();
        let cc = call_cfg(&client);
        let mut g = Guard::new(&client);
        let mut c = g.start(spec(&cc, "GET"), 0.0);
        let s = send(&mut g, &mut c, 0.0);
        let unsent = Ended::Hook { sent: false };
        assert!(g.decides(&unsent), "it ends a round of hedges");
        assert_eq!(settle(&mut g, &mut c, &s, unsent, 1.0), Verdict::End);
        assert_eq!((c.attempts(), g.stats.attempts), (0, 0));
        assert_eq!(window(&mut g, 1.0), (0, 0));
        assert_eq!(g.in_flight(), 0);
        // an afterResponse hook that failed: sent, counted, still no sample
        let mut c = g.start(spec(&cc, "GET"), 2.0);
        let s = send(&mut g, &mut c, 2.0);
        let answered = Ended::Hook { sent: true };
        assert_eq!(settle(&mut g, &mut c, &s, answered, 3.0), Verdict::End);
        assert_eq!((c.attempts(), g.stats.attempts), (1, 1));
        assert_eq!(window(&mut g, 3.0), (0, 0));
    }
}
