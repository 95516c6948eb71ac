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
use super::cancel::{Cancel, CancelReason};
use super::convert::to_js;
use super::crosstab::{CrossTab, Peer};
use super::dedupe::{Flight, Lead, Waiter};
use super::host::{epoch_ms, now_ms};
use super::runtime::{Alarm, Gate, OnAbort, Wake};
use super::storage::Memory;
use super::vecmap::VecMap;
use crate::policy::breaker::State as BreakerState;
use crate::policy::guard::Guard;
use crate::policy::limiter::WaiterId;
use crate::policy::options::ClientConfig;

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

/// The engine's mutable state: the policy core's, and what only the host
/// side has (gates, cancel switches, listeners, shared flights).
pub struct State {
    /// Every decision of the call loop, and the counters of `stats()`.
    pub guard: Guard,
    /// Queued calls by waiter id: the gate a freed slot opens.
    waiters: VecMap<WaiterId, Gate>,
    /// Calls in progress, so `close()` can cancel them.
    calls: VecMap<u64, Cancel>,
    listeners: Vec<Listener>,
    /// Shared network calls in flight, by dedupe key.
    flights: VecMap<String, Rc<Flight>>,
    /// The last request number (request ids count 1, 2, 3 ... per client)
    /// and the last internal key (of `calls` and `listeners`).
    counters: (u64, u64),
    closed: bool,
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
        let st = State {
            guard: Guard::new(&cfg),
            waiters: VecMap::new(),
            calls: VecMap::new(),
            listeners: Vec::new(),
            flights: VecMap::new(),
            counters: (0, 0),
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
        st.counters.0 += 1;
        st.counters.0
    }

    fn next_key(st: &mut State) -> u64 {
        st.counters.1 += 1;
        st.counters.1
    }

    /// Adds a listener of `event`; returns its id for [`Engine::off`].
    pub fn on(&self, event: &str, func: Function) -> u32 {
        let mut st = self.st.borrow_mut();
        let id = u32::try_from(Engine::next_key(&mut st)).unwrap_or(u32::MAX);
        st.listeners.push(Listener {
            id,
            event: event.to_string(),
            func,
        });
        id
    }

    pub fn off(&self, id: u32) {
        self.st.borrow_mut().listeners.retain(|l| l.id != id);
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

    /// Asks the policy core (for the call `request_id`), then does what its
    /// answer asks of the host: breaker events, news for the other tabs.
    pub(super) fn decide<R>(&self, request_id: &str, ask: impl FnOnce(&mut Guard) -> R) -> R {
        let answer = ask(&mut self.st.borrow_mut().guard);
        self.flush(request_id, true);
        answer
    }

    /// Emits the breaker transitions the policy core recorded and sends the
    /// holds it set; this tab's own transitions (`share`) go to the other
    /// tabs too.
    fn flush(&self, request_id: &str, share: bool) {
        let (transitions, holds) = {
            let g = &mut self.st.borrow_mut().guard;
            (g.drain_transitions(), g.drain_holds())
        };
        if let Some(x) = self.crosstab.get() {
            for h in holds {
                x.send(&Peer::Cooldown {
                    key: h.key,
                    until: epoch_ms() + h.wait_ms,
                    quota: h.quota,
                });
            }
        }
        if transitions.is_empty() {
            return;
        }
        let now = now_ms();
        for t in transitions {
            if let Some(x) = self.crosstab.get().filter(|_| share) {
                let info = self.st.borrow().guard.open_info(&t.key, now);
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
            if st.closed {
                None
            } else {
                st.guard.next_half_open()
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
        self.decide("", |g| g.refresh(now_ms()));
        self.arm_half_open();
    }

    /// News from another tab: follow its breaker, respect its cooldown.
    pub fn apply_peer(&self, msg: Peer) {
        let (now, epoch) = (now_ms(), epoch_ms());
        {
            let g = &mut self.st.borrow_mut().guard;
            match msg {
                Peer::Open { key, until, period } => g.peer_open(&key, now, until - epoch, period),
                Peer::Closed { key } => g.peer_closed(&key, now),
                Peer::Cooldown { key, until, quota } => {
                    g.peer_hold(&key, until - epoch, quota, now)
                }
            }
        }
        self.flush("", false);
    }

    /// Frees a slot; if a call is queued, the slot goes straight to it.
    pub fn release_slot(&self) {
        loop {
            let next = {
                let st = &mut *self.st.borrow_mut();
                st.guard
                    .release_slot()
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

    /// Parks a queued call's gate until a freed slot opens it.
    pub(super) fn park(&self, id: WaiterId, gate: Gate) {
        self.st.borrow_mut().waiters.insert(id, gate);
    }

    /// The queued call `id` stops waiting: `true` when its slot was granted
    /// meanwhile (it must then be released).
    pub(super) fn unpark(&self, id: WaiterId, granted: bool) -> bool {
        let mut st = self.st.borrow_mut();
        st.waiters.remove(&id);
        !granted && !st.guard.leave_queue(id)
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
            self.st.borrow_mut().guard.joined();
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
            id = Engine::next_key(&mut st);
            if st.closed {
                drop(st);
                call.cancel.cancel(CancelReason::Closed);
                return Err(call.cancel.abort_error().to_js());
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
