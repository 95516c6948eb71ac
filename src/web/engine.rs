//! The call loop: breaker, concurrency slot, attempt, verdict, budget,
//! backoff — each decision taken by the policy core, each wait cancellable.
//!
//! `Engine` is shared (`Rc`) by the `Client` and every call in flight. Its
//! mutable state sits in one `RefCell` that is never held across an
//! `await` or while a JS listener runs.

use std::cell::{OnceCell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::Function;
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::call::{Call, Mode, ResponseType};
use super::cancel::{gate_timer, Alarm, Cancel, CancelReason, EventLink, Gate, OnAbort, Wake};
use super::convert::to_js;
use super::crosstab::{CrossTab, Peer};
use super::dedupe::{Flight, Lead, Waiter};
use super::errors::{CallError, ErrorKind};
use super::fetch::{self, AttemptEnd, Decided};
use super::host::{epoch_ms, global_target, is_offline, now_ms, rand01};
use super::storage::Memory;
use super::vecmap::VecMap;
use crate::policy::backoff::{parse_retry_after, Backoff};
use crate::policy::breaker::{Breakers, Permit, State as BreakerState};
use crate::policy::budget::RetryBudget;
use crate::policy::classify::{plan_retry, sample, Outcome, RetryDenied, RetryInput, Sample};
use crate::policy::deadline::Deadline;
use crate::policy::latency::Latencies;
use crate::policy::limiter::{Acquire, Limiter, WaiterId};
use crate::policy::options::{BreakerConfig, ClientConfig, RetryConfig};
use crate::policy::ratelimit::{Admit, Limits, Quota, Why};
use crate::policy::stats::Stats;

/// The object a listener receives (the JS `StormguardEvent`): `type` and
/// `requestId` always, each other field only when the event carries it
/// (absent, not `undefined`).
#[derive(Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event<'a> {
    #[serde(rename = "type")]
    pub event: &'a str,
    pub request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<BreakerState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<BreakerState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

pub struct Listener {
    pub id: u32,
    pub event: String,
    pub func: Function,
}

pub struct State {
    pub stats: Stats,
    pub budget: Option<RetryBudget>,
    pub breakers: Option<Breakers>,
    pub limiter: Limiter,
    /// Queued calls by waiter id: the gate a freed slot opens.
    pub waiters: VecMap<WaiterId, Gate>,
    /// Calls in progress, so `close()` can cancel them.
    pub calls: VecMap<u64, Cancel>,
    pub listeners: Vec<Listener>,
    /// Shared network calls in flight, by dedupe key.
    pub flights: VecMap<String, Rc<Flight>>,
    /// By breaker key: no attempt before a time (Retry-After cooldowns,
    /// spent quotas), spacing while a quota is low.
    pub limits: Limits,
    /// Answer times by breaker key, for hedging at the p95.
    pub latencies: Latencies,
    /// The last request number (request ids count 1, 2, 3 ... per client).
    pub next_id: u64,
    /// The last internal key (of `calls` and `listeners`).
    pub next_key: u64,
    pub closed: bool,
}

pub struct Engine {
    pub cfg: ClientConfig,
    pub st: RefCell<State>,
    /// Set once after construction when `crossTab` is on and the host can.
    pub crosstab: OnceCell<CrossTab>,
    /// `schema()`'s last-good copies where they are kept in memory.
    pub memory: Memory,
    /// The timer that turns the first open breaker half-open when its
    /// period ends, and that time.
    half_open: RefCell<Option<(Alarm, f64)>>,
    me: Weak<Engine>,
}

impl Engine {
    pub fn new(cfg: ClientConfig) -> Rc<Engine> {
        let limiter = match &cfg.concurrency {
            Some(c) => Limiter::new(c),
            None => Limiter::unlimited(),
        };
        let st = State {
            stats: Stats::default(),
            budget: cfg.budget.as_ref().map(RetryBudget::new),
            breakers: cfg.breaker.clone().map(Breakers::new),
            limiter,
            waiters: VecMap::new(),
            calls: VecMap::new(),
            listeners: Vec::new(),
            flights: VecMap::new(),
            limits: Limits::new(),
            latencies: Latencies::new(
                cfg.breaker
                    .as_ref()
                    .map_or(BreakerConfig::default().window_ms, |b| b.window_ms),
            ),
            next_id: 0,
            next_key: 0,
            closed: false,
        };
        Rc::new_cyclic(|me| Engine {
            cfg,
            st: RefCell::new(st),
            crosstab: OnceCell::new(),
            memory: Memory::default(),
            half_open: RefCell::new(None),
            me: me.clone(),
        })
    }

    pub fn next_id(&self) -> u64 {
        let mut st = self.st.borrow_mut();
        st.next_id += 1;
        st.next_id
    }

    /// Calls `build` and every listener of `event`, only if there is one.
    /// `build` is `dyn` so the body exists once, not once per event.
    pub fn emit<'a>(&self, event: &'a str, request_id: &'a str, build: &dyn Fn(&mut Event<'a>)) {
        let funcs: Vec<Function> = self
            .st
            .borrow()
            .listeners
            .iter()
            .filter(|l| l.event == event)
            .map(|l| l.func.clone())
            .collect();
        if funcs.is_empty() {
            return;
        }
        let mut o = Event {
            event,
            request_id,
            ..Event::default()
        };
        build(&mut o);
        let ev = to_js(&o);
        for f in funcs {
            // A listener that throws must not break the call.
            let _ = f.call1(&JsValue::NULL, &ev);
        }
    }

    pub(super) fn emit_call<'a>(
        &self,
        event: &'a str,
        call: &'a Call,
        attempt: u32,
        build: &dyn Fn(&mut Event<'a>),
    ) {
        self.emit(event, &call.request_id, &|o| {
            o.method = Some(&call.method);
            o.url = Some(&call.url);
            o.attempt = Some(attempt);
            build(o);
        });
    }

    /// Emits the breaker transitions the policy core recorded and, for this
    /// tab's own (`share`), tells the other tabs.
    fn flush_transitions(&self, request_id: &str, share: bool) {
        let transitions = match self.st.borrow_mut().breakers.as_mut() {
            Some(b) => b.drain_transitions(),
            None => return,
        };
        if transitions.is_empty() {
            return;
        }
        let now = now_ms();
        for t in transitions {
            if t.to == BreakerState::Open {
                self.st.borrow_mut().stats.breaker_opens += 1;
            }
            if let Some(x) = self.crosstab.get().filter(|_| share) {
                let info = self
                    .st
                    .borrow()
                    .breakers
                    .as_ref()
                    .and_then(|b| b.open_info(&t.key, now));
                match (t.to, info) {
                    (BreakerState::Open, Some((left, period))) => x.send(&Peer::Open {
                        key: t.key.clone(),
                        until: epoch_ms() + left,
                        period,
                    }),
                    (BreakerState::Closed, _) => x.send(&Peer::Closed { key: t.key.clone() }),
                    _ => {}
                }
            }
            // Open -> half-open happens with time, and a peer's news is no
            // call's doing either.
            let id = if t.to == BreakerState::HalfOpen || !share {
                ""
            } else {
                request_id
            };
            self.emit("breaker", id, &|o| {
                o.key = Some(&t.key);
                o.from = Some(t.from);
                o.to = Some(t.to);
            });
        }
        self.arm_half_open();
    }

    /// Sets the timer for the first open breaker's end, unless it is set
    /// for that time already; drops it when no breaker is open.
    fn arm_half_open(&self) {
        let next = {
            let st = self.st.borrow();
            match st.breakers.as_ref() {
                Some(b) if !st.closed => b.next_half_open(),
                _ => None,
            }
        };
        let mut slot = self.half_open.borrow_mut();
        if slot.as_ref().map(|(_, at)| *at) == next {
            return;
        }
        *slot = next.map(|at| {
            let me = self.me.clone();
            let alarm = Alarm::run(at - now_ms(), move || {
                if let Some(engine) = me.upgrade() {
                    engine.half_open_due();
                }
            });
            (alarm, at)
        });
    }

    /// An open period has ended: report the breakers turned half-open now
    /// (an event with `requestId: ''`), not when a call next asks.
    fn half_open_due(&self) {
        self.half_open.borrow_mut().take();
        if self.st.borrow().closed {
            return;
        }
        if let Some(b) = self.st.borrow_mut().breakers.as_mut() {
            b.refresh(now_ms());
        }
        self.flush_transitions("", true);
        self.arm_half_open();
    }

    /// News from another tab: follow its breaker, respect its cooldown.
    pub fn apply_peer(&self, msg: Peer) {
        let (now, epoch) = (now_ms(), epoch_ms());
        {
            let mut st = self.st.borrow_mut();
            match msg {
                Peer::Open { key, until, period } => {
                    if let Some(b) = st.breakers.as_mut() {
                        b.force_open(&key, now, until - epoch, period);
                    }
                }
                Peer::Closed { key } => {
                    if let Some(b) = st.breakers.as_mut() {
                        b.force_close(&key, now);
                    }
                }
                Peer::Cooldown { key, until, quota } => {
                    // No longer than this client would wait itself.
                    let until = now + (until - epoch).min(self.hold_cap());
                    let why = if quota { Why::Quota } else { Why::Peer };
                    st.limits.hold(&key, until, why, now);
                }
            }
        }
        self.flush_transitions("", false);
    }

    /// The longest hold this client sets or accepts: `maxRetryAfterMs`.
    fn hold_cap(&self) -> f64 {
        self.cfg.retry.as_ref().map_or_else(
            || RetryConfig::default().max_retry_after_ms,
            |r| r.max_retry_after_ms,
        )
    }

    /// Retry-After for `key`: this client's other calls and the other tabs
    /// make no attempt to it before `wait_ms` has passed.
    fn cooldown(&self, key: &str, wait_ms: f64) {
        let now = now_ms();
        self.st
            .borrow_mut()
            .limits
            .hold(key, now + wait_ms, Why::RetryAfter, now);
        self.tell_tabs(key, wait_ms, false);
    }

    /// Tells the other tabs to hold `key` for `wait_ms` (a spent `quota`,
    /// or Retry-After).
    fn tell_tabs(&self, key: &str, wait_ms: f64, quota: bool) {
        if let Some(x) = self.crosstab.get() {
            x.send(&Peer::Cooldown {
                key: key.to_owned(),
                until: epoch_ms() + wait_ms,
                quota,
            });
        }
    }

    /// Waits out a cooldown of the call's key and, while its quota is low,
    /// for its turn; fails at once with CircuitOpenError when the wait
    /// outlasts the deadline. Returns the time after the wait (`now` itself
    /// when there was none).
    async fn respect_cooldown(
        &self,
        call: &Call,
        deadline: &Deadline,
        mut now: f64,
    ) -> Result<f64, CallError> {
        // One event per reason, not one per look.
        let mut told: Option<Why> = None;
        while let Some(wait) = self.admit(call, deadline, now, &mut told)? {
            if call.cancel.sleep(wait).await == Wake::Cancelled {
                return Err(abort_error(&call.cancel));
            }
            now = now_ms();
        }
        Ok(now)
    }

    /// One look at the call's key: None to go now, or how long to wait
    /// (announced by a 'wait' event unless `told` of that reason already).
    /// Out of line: kept out of the call loop's state machine.
    #[inline(never)]
    fn admit(
        &self,
        call: &Call,
        deadline: &Deadline,
        now: f64,
        told: &mut Option<Why>,
    ) -> Result<Option<f64>, CallError> {
        // schema() fails over at once, but not on the cooldown its own
        // last answer set (its planned retry waits exactly that long, and
        // a timer may fire a hair early).
        let fail_fast = call.prefer_cache && call.cancel.attempts() == 0;
        let max_wait = if fail_fast {
            0.0
        } else {
            deadline.remaining(now)
        };
        let admit = self.st.borrow_mut().limits.admit(
            &call.breaker_key,
            now,
            max_wait,
            call.cfg.rate_limit,
        );
        let (wait, why) = match admit {
            Admit::Now => return Ok(None),
            Admit::Wait { ms, why } => (ms, why),
            Admit::Refuse { ms, .. } => {
                return Err(CallError::new(ErrorKind::CircuitOpen {
                    key: call.breaker_key.clone(),
                    retry_in_ms: ms,
                }))
            }
        };
        if *told != Some(why) {
            *told = Some(why);
            self.emit_call("wait", call, call.cancel.attempts() + 1, &|o| {
                o.delay_ms = Some(wait);
                o.reason = Some(why.as_str());
                o.key = Some(&call.breaker_key);
            });
        }
        Ok(Some(wait))
    }

    /// What an answer to the call announced of its key's quota (the call
    /// obeys rate limits); a quota spent is told to the other tabs.
    #[inline(never)]
    pub(super) fn observe_quota(&self, call: &Call, quota: Option<&Quota>) {
        let (now, cap) = (now_ms(), self.hold_cap());
        let held = self
            .st
            .borrow_mut()
            .limits
            .observe(&call.breaker_key, quota, now, cap);
        if let Some(until) = held {
            self.tell_tabs(&call.breaker_key, until - now, true);
        }
    }

    fn breaker_acquire(&self, call: &Call, now: f64) -> Result<Option<Permit>, f64> {
        let res = match self.st.borrow_mut().breakers.as_mut() {
            Some(b) => b.acquire(&call.breaker_key, now, rand01()).map(Some),
            None => return Ok(None),
        };
        self.flush_transitions(&call.request_id, true);
        res
    }

    pub(super) fn breaker_record(&self, call: &Call, permit: Option<Permit>, s: Sample) {
        let Some(permit) = permit else { return };
        if let Some(b) = self.st.borrow_mut().breakers.as_mut() {
            b.record(&call.breaker_key, permit, s, now_ms());
        }
        self.flush_transitions(&call.request_id, true);
    }

    /// Takes a concurrency slot, waiting FIFO if need be. The wait ends at
    /// the deadline or when the call is cancelled.
    async fn acquire_slot(&self, call: &Call, deadline: &Deadline) -> Result<(), CallError> {
        let acquired = self.st.borrow_mut().limiter.try_acquire();
        let id = match acquired {
            Acquire::Granted => return Ok(()),
            Acquire::Full => {
                self.st.borrow_mut().stats.queue_rejected += 1;
                return Err(CallError::new(ErrorKind::QueueFull));
            }
            Acquire::Queued(id) => id,
        };
        let gate = Gate::new();
        self.st.borrow_mut().waiters.insert(id, gate.clone());
        call.cancel.set_gate(Some(gate.clone()));
        let wake = {
            let _timer = gate_timer(&gate, deadline.remaining(now_ms()));
            gate.wait().await
        };
        call.cancel.set_gate(None);
        let granted_meanwhile = {
            let mut st = self.st.borrow_mut();
            st.waiters.remove(&id);
            wake != Wake::Granted && !st.limiter.cancel(id)
        };
        match wake {
            Wake::Granted => Ok(()),
            other => {
                if granted_meanwhile {
                    // The slot reached us as we gave up: pass it on.
                    self.release_slot();
                }
                Err(if other == Wake::Timer {
                    CallError::new(ErrorKind::Timeout { phase: "queue" })
                } else {
                    abort_error(&call.cancel)
                })
            }
        }
    }

    /// While the host is offline no attempt is made: the call waits for the
    /// `online` event within its deadline (or, with `waitForOnline: false`,
    /// fails at once with an offline NetworkError).
    async fn wait_online(&self, call: &Call, deadline: &Deadline) -> Result<(), CallError> {
        let offline_error = |denied: Option<RetryDenied>| {
            let mut e = CallError::new(ErrorKind::Network {
                cause: JsValue::UNDEFINED,
                offline: true,
            });
            e.retry_denied = denied;
            e
        };
        let target = match global_target() {
            Some(t) if call.cfg.wait_for_online && !call.prefer_cache => t,
            _ => return Err(offline_error(None)),
        };
        let gate = Gate::new();
        call.cancel.set_gate(Some(gate.clone()));
        let wake = {
            let g = gate.clone();
            let _online = EventLink::once(&target, "online", move || g.open(Wake::Done));
            let _timer = gate_timer(&gate, deadline.remaining(now_ms()));
            gate.wait().await
        };
        call.cancel.set_gate(None);
        match wake {
            Wake::Cancelled => Err(abort_error(&call.cancel)),
            Wake::Timer => Err(offline_error(Some(RetryDenied::Deadline))),
            _ => Ok(()),
        }
    }

    /// Frees a slot; if a call is queued, the slot goes straight to it.
    pub fn release_slot(&self) {
        loop {
            let next = {
                let mut st = self.st.borrow_mut();
                st.limiter
                    .release()
                    .map(|id| st.waiters.remove(&id).ok_or(id))
            };
            match next {
                None => return,
                Some(Ok(gate)) => {
                    gate.open(Wake::Granted);
                    return;
                }
                // A waiter that is already gone: give its slot back.
                Some(Err(_)) => continue,
            }
        }
    }

    /// Runs a call to its end: resolves with the value of its last attempt
    /// or rejects with a descriptor of the reason it stopped.
    pub async fn run(&self, call: &Call) -> Result<JsValue, JsValue> {
        let deadline = Deadline::new(now_ms(), call.cfg.deadline_ms);
        self.st.borrow_mut().stats.requests += 1;
        let result = self.attempts(call, &deadline).await;
        result.map_err(|e| {
            let attempts = call.cancel.attempts();
            let e = e.stamped(&call.request_id, attempts, deadline.elapsed(now_ms()));
            self.st.borrow_mut().stats.failures += 1;
            self.emit_call("giveUp", call, attempts, &|o| {
                o.elapsed_ms = Some(e.elapsed_ms);
                o.status = e.status();
                o.error_name = Some(e.name());
            });
            e.to_js()
        })
    }

    async fn attempts(&self, call: &Call, deadline: &Deadline) -> Result<JsValue, CallError> {
        let retry = call.cfg.retry.clone().unwrap_or_else(RetryConfig::off);
        let mut backoff = Backoff::from_config(&retry);
        // The error a retry was planned after: if the deadline passes before
        // the retry can start (a timer that fired late), the call ends with
        // it, as the planner would have, not with a bare TimeoutError.
        let mut last: Option<CallError> = None;
        let out_of_time = |last: Option<CallError>| match last {
            Some(mut e) => {
                e.retry_denied = Some(RetryDenied::Deadline);
                e
            }
            None => CallError::new(ErrorKind::Timeout { phase: "deadline" }),
        };
        loop {
            if call.cancel.is_cancelled() {
                return Err(abort_error(&call.cancel));
            }
            let mut now = now_ms();
            if deadline.expired(now) {
                return Err(out_of_time(last));
            }
            if is_offline() {
                self.wait_online(call, deadline).await?;
                now = now_ms();
            }
            let now = self.respect_cooldown(call, deadline, now).await?;
            let circuit_open = |retry_in_ms| {
                CallError::new(ErrorKind::CircuitOpen {
                    key: call.breaker_key.clone(),
                    retry_in_ms,
                })
            };
            let permit = self.breaker_acquire(call, now).map_err(circuit_open)?;
            // One half-open probe across all tabs: the others stay open. The
            // lock may answer late: the wait ends on abort and deadline too.
            let _probe_lock = match (permit, self.crosstab.get()) {
                (Some(Permit::Probe), Some(x)) => {
                    let lock = x.probe_lock(&call.breaker_key);
                    match call.cancel.within(deadline.remaining(now), lock).await {
                        Ok(Some(lock)) => Some(lock),
                        waited => {
                            self.breaker_record(call, permit, Sample::Ignored);
                            return Err(match waited {
                                Err(Wake::Cancelled) => abort_error(&call.cancel),
                                Err(_) => out_of_time(last),
                                Ok(_) => circuit_open(0.0),
                            });
                        }
                    }
                }
                _ => None,
            };
            if let Err(e) = self.acquire_slot(call, deadline).await {
                self.breaker_record(call, permit, Sample::Ignored);
                return Err(e);
            }
            // A slot (or a cooldown) that came right at the deadline: no
            // attempt with nothing left to run in.
            if deadline.expired(now_ms()) {
                self.release_slot();
                self.breaker_record(call, permit, Sample::Ignored);
                return Err(out_of_time(last));
            }
            let Decided {
                end,
                permit,
                phase,
                quota,
            } = self.round(call, deadline, permit, &retry).await;
            let attempt = call.cancel.attempts();
            let answered = matches!(
                end,
                AttemptEnd::Done(_) | AttemptEnd::Parse(_) | AttemptEnd::Status { .. }
            );
            if call.cfg.rate_limit && answered {
                self.observe_quota(call, quota.as_ref());
            }

            let failure_statuses = self.cfg.failure_statuses();
            let (outcome, mut err, response, retry_after) = match end {
                AttemptEnd::Done(v) => {
                    self.breaker_record(call, permit, Sample::Success);
                    return Ok(v);
                }
                AttemptEnd::Parse(cause) => {
                    // The server answered: not a breaker failure.
                    self.breaker_record(call, permit, Sample::Success);
                    return Err(CallError::new(ErrorKind::Parse { cause }));
                }
                AttemptEnd::Cancelled => {
                    self.breaker_record(call, permit, Sample::Ignored);
                    return Err(abort_error(&call.cancel));
                }
                AttemptEnd::Timeout => {
                    self.st.borrow_mut().stats.timeouts += 1;
                    self.emit_call("timeout", call, attempt, &|o| {
                        o.elapsed_ms = Some(deadline.elapsed(now_ms()));
                    });
                    let e = CallError::new(ErrorKind::Timeout { phase });
                    (Outcome::Timeout, e, None, None)
                }
                AttemptEnd::Network(cause) => {
                    let offline = is_offline();
                    let e = CallError::new(ErrorKind::Network { cause, offline });
                    (Outcome::Network, e, None, None)
                }
                AttemptEnd::Status {
                    status,
                    status_text,
                    retry_after,
                    reset_ms,
                    response,
                    body,
                } => {
                    let e = CallError::new(ErrorKind::Http {
                        status,
                        status_text,
                        body,
                    });
                    // A Retry-After present decides, even malformed; without
                    // one, the rate-limit reset (ky's reading).
                    let ra = if retry.retry_after && (status == 429 || status == 503) {
                        match retry_after {
                            Some(v) => parse_retry_after(&v, epoch_ms()),
                            None => reset_ms,
                        }
                    } else {
                        None
                    };
                    // Only a wait this client honours holds its other calls
                    // (and the other tabs) back; one beyond maxRetryAfterMs
                    // just ends this call.
                    if let Some(wait) = ra.filter(|w| *w <= retry.max_retry_after_ms) {
                        self.cooldown(&call.breaker_key, wait);
                    }
                    (Outcome::Status(status), e, Some(response), ra)
                }
            };
            // A request that failed because the device went offline says
            // nothing about the server.
            let offline = matches!(err.kind, ErrorKind::Network { offline: true, .. });
            let s = if offline {
                Sample::Ignored
            } else {
                sample(outcome, failure_statuses)
            };
            self.breaker_record(call, permit, s);

            let now = now_ms();
            let input = RetryInput {
                outcome,
                attempts_made: attempt,
                method: &call.method,
                has_idempotency_key: call.has_key,
                retry_after_ms: retry_after,
                remaining_ms: deadline.remaining(now),
            };
            let verdict = plan_retry(&retry, &mut backoff, &input, rand01()).and_then(|delay| {
                let mut st = self.st.borrow_mut();
                let allowed = st.budget.as_mut().is_none_or(|b| b.try_retry(now));
                if allowed {
                    Ok(delay)
                } else {
                    st.stats.budget_denied += 1;
                    Err(RetryDenied::Budget)
                }
            });
            let delay = match verdict {
                Ok(delay) => delay,
                Err(denied) => {
                    // fetch() resolves with the final Response whatever its status.
                    if let (Mode::Fetch, Some(resp)) = (call.mode, response) {
                        return Ok(resp);
                    }
                    err.retry_denied = Some(denied);
                    return Err(err);
                }
            };
            if let Some(resp) = &response {
                fetch::discard(resp);
            }
            self.st.borrow_mut().stats.retries += 1;
            self.emit_call("retry", call, attempt, &|o| {
                o.delay_ms = Some(delay);
                o.status = err.status();
                o.error_name = Some(err.name());
            });
            // fetch() resolves with a final Response, never rejects with an
            // HttpError: its deadline stays a TimeoutError.
            let http_from_fetch = matches!(
                (call.mode, &err.kind),
                (Mode::Fetch, ErrorKind::Http { .. })
            );
            last = (!http_from_fetch).then_some(err);
            if call.cancel.sleep(delay).await == Wake::Cancelled {
                return Err(abort_error(&call.cancel));
            }
        }
    }

    /// Runs a call to its end as its caller sees it: refused once the
    /// client is closed, cancelled by the caller's signal and by `close()`,
    /// and sharing the network call of an identical GET already in flight.
    pub async fn call(
        self: Rc<Self>,
        call: Call,
        signal: Option<AbortSignal>,
    ) -> Result<JsValue, JsValue> {
        // A closed client shares nothing: run_linked refuses the call.
        let key = match &call.dedupe_key {
            Some(key) if !self.st.borrow().closed => key.clone(),
            _ => return self.run_linked(call, signal).await,
        };
        let mut me = Waiter {
            request_id: call.request_id.clone(),
            started_ms: now_ms(),
            deadline_ms: None,
        };
        // A cancelled flight (its last caller aborted) is ending: a new
        // caller starts a flight of its own instead of inheriting the abort.
        let joined = self
            .st
            .borrow()
            .flights
            .get(&key)
            .filter(|f| !f.cancel.is_cancelled())
            .cloned();
        if let Some(f) = joined {
            {
                let mut st = self.st.borrow_mut();
                st.stats.requests += 1;
                st.stats.deduped += 1;
            }
            // A joiner's own deadline still holds; the first caller's is
            // the network call's.
            me.deadline_ms = Some(call.cfg.deadline_ms);
            let seat = f.seat();
            return f.join(seat, signal, me).await;
        }
        let copy_response = matches!(call.mode, Mode::Request(ResponseType::Response));
        let flight = Rc::new(Flight::new(copy_response));
        self.st
            .borrow_mut()
            .flights
            .insert(key.clone(), flight.clone());
        let (engine, f) = (self.clone(), flight.clone());
        let network = Box::pin(async move {
            let call = Call {
                cancel: f.cancel.clone(),
                ..call
            };
            let outcome = engine.clone().run_linked(call, None).await;
            {
                let mut st = engine.st.borrow_mut();
                if st.flights.get(&key).is_some_and(|x| Rc::ptr_eq(x, &f)) {
                    st.flights.remove(&key);
                }
            }
            outcome
        });
        let seat = flight.seat();
        Lead {
            network: Some(network),
            join: Box::pin(flight.clone().join(seat.clone(), signal, me)),
            flight,
            seat,
            answer: None,
        }
        .await
    }

    async fn run_linked(
        self: Rc<Self>,
        call: Call,
        signal: Option<AbortSignal>,
    ) -> Result<JsValue, JsValue> {
        let id;
        {
            let mut st = self.st.borrow_mut();
            st.next_key += 1;
            id = st.next_key;
            if st.closed {
                drop(st);
                call.cancel.cancel(CancelReason::Closed);
                return Err(abort_error(&call.cancel).to_js());
            }
            st.calls.insert(id, call.cancel.clone());
        }
        let _link = signal.as_ref().and_then(|s| {
            let cancel = call.cancel.clone();
            OnAbort::new(s, move |why| cancel.cancel(CancelReason::Caller(why)))
        });
        let result = self.run(&call).await;
        self.st.borrow_mut().calls.remove(&id);
        result
    }

    /// `close()`: cancels every call in progress; later calls are refused.
    pub fn close(&self) {
        if let Some(x) = self.crosstab.get() {
            x.close();
        }
        let calls: Vec<Cancel> = {
            let mut st = self.st.borrow_mut();
            st.closed = true;
            st.calls.take_values()
        };
        self.half_open.borrow_mut().take();
        self.memory.clear();
        for c in calls {
            c.cancel(CancelReason::Closed);
        }
    }
}

/// The AbortError for a cancelled call, carrying the signal's reason.
pub fn abort_error(cancel: &Cancel) -> CallError {
    let reason = match cancel.reason() {
        Some(CancelReason::Caller(r)) => r,
        Some(CancelReason::Closed) | None => JsValue::from_str("client closed"),
    };
    CallError::new(ErrorKind::Abort { reason })
}
