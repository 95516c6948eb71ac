//! The shared state of one client family: the policy core's [`Guard`]
//! (breakers, budget, slots, holds, counters), the calls parked on a slot
//! or a half-open probe, the shared flights, the calls in progress that
//! `close()` cancels, listeners, the transport, the cross-tab channel and
//! `schema()`'s memory copies. The call driver (`driver.rs`) drives each
//! call against it.
//!
//! `Engine` is shared (`Rc`) by the `Client`, its derived clients and every
//! call in flight. Its state is private, behind a small API: [`Engine::decide`]
//! is the only road to a `Guard` method that may change a breaker (it then
//! does what the answer asks of the host: breaker events, news for the other
//! tabs, probe waiters woken); [`Engine::guard`] reads; the few other steps
//! that change the guard (a call counted, a slot taken, a latency recorded)
//! are named methods. The mutable state sits in one `RefCell` that is never
//! held across an `await` or while a JS listener runs.

use std::cell::{OnceCell, Ref, RefCell};
use std::rc::{Rc, Weak};

use super::cancel::{Cancel, CancelReason};
use super::crosstab::CrossTab;
use super::dedupe::Flight;
use super::events::Listeners;
use super::layer::Layer;
use super::runtime::{Alarm, Gate, Wake};
use super::storage::{Memory, Store};
use super::transport::Transport;
use super::vecmap::VecMap;
use crate::policy::breaker::{ProbeWaiter, Snapshot};
use crate::policy::guard::{CallState, Guard, Spec};
use crate::policy::limiter::{Acquire, WaiterId};
use crate::policy::options::ClientConfig;

mod news;

/// The engine's mutable state: the policy core's, and what only the host
/// side has (gates, cancel switches, shared flights).
struct State {
    /// Every decision of the call loop, and the counters of `stats()`.
    guard: Guard,
    /// Queued calls by waiter id: the gate a freed slot opens.
    waiters: VecMap<WaiterId, Gate>,
    /// Calls waiting for a half-open probe: the gate its outcome opens.
    probe_waits: VecMap<ProbeWaiter, Gate>,
    /// Calls in progress and the client of each, so `close()` can cancel
    /// them.
    calls: VecMap<u64, (Rc<Layer>, Cancel)>,
    /// Shared network calls in flight, by dedupe key.
    flights: VecMap<String, Rc<Flight>>,
    /// The last request number (request ids count 1, 2, 3 ... per client)
    /// and the last internal key (of `calls`).
    counters: (u64, u64),
    closed: bool,
}

pub struct Engine {
    cfg: ClientConfig,
    st: RefCell<State>,
    /// Set once after construction when `crossTab` is on and the host can.
    crosstab: OnceCell<CrossTab>,
    /// `schema()`'s last-good copies where they are kept in memory.
    memory: Memory,
    events: Listeners,
    /// Where attempts go (the `fetch` option, else the global fetch).
    transport: Transport,
    /// The timer that turns the first open breaker half-open when its
    /// period ends, and that time (see `news.rs`).
    half_open: RefCell<Option<(Alarm, f64)>>,
    me: Weak<Engine>,
}

impl Engine {
    pub fn new(cfg: ClientConfig, transport: Transport) -> Rc<Engine> {
        let st = State {
            guard: Guard::new(&cfg),
            waiters: VecMap::new(),
            probe_waits: VecMap::new(),
            calls: VecMap::new(),
            flights: VecMap::new(),
            counters: (0, 0),
            closed: false,
        };
        Rc::new_cyclic(|me| Engine {
            cfg,
            st: RefCell::new(st),
            memory: Memory::default(),
            events: Listeners::default(),
            transport,
            crosstab: OnceCell::new(),
            half_open: RefCell::new(None),
            me: me.clone(),
        })
    }

    /// The listeners of the client family's events.
    pub fn events(&self) -> &Listeners {
        &self.events
    }

    /// Where attempts go unless a client says otherwise.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The cross-tab channel, if the engine has one.
    pub fn crosstab(&self) -> Option<&CrossTab> {
        self.crosstab.get()
    }

    /// Gives the engine its cross-tab channel (once, after construction).
    pub fn set_crosstab(&self, x: CrossTab) {
        let _ = self.crosstab.set(x);
    }

    /// `schema()`'s last-good copies: in LocalStorage as the client's
    /// `storage` option says, else in the engine's memory.
    pub fn store(&self) -> Store {
        Store::new(self.cfg.storage.as_ref(), &self.memory)
    }

    /// The policy core, to read (`stats()`, what a step asks before it
    /// decides). A change goes through [`Engine::decide`] or the steps
    /// below.
    pub fn guard(&self) -> Ref<'_, Guard> {
        Ref::map(self.st.borrow(), |st| &st.guard)
    }

    /// A new call of `spec`, counted, its deadline from `since`.
    pub fn start<'a>(&self, spec: &'a Spec, since: f64) -> CallState<'a> {
        self.st.borrow_mut().guard.start(spec, since)
    }

    /// A call ended in failure (`stats().failures`).
    pub fn failed(&self) {
        self.st.borrow_mut().guard.failed();
    }

    /// The call ended before the retry it was granted went out: given back.
    pub fn retry_unsent(&self, c: &mut CallState) {
        self.st.borrow_mut().guard.retry_unsent(c);
    }

    /// A call joined an identical one in flight instead of sending.
    pub fn joined(&self) {
        self.st.borrow_mut().guard.joined();
    }

    /// `schema()` answered with its last-good copy.
    pub fn fell_back(&self) {
        self.st.borrow_mut().guard.stats.fallbacks += 1;
    }

    /// Takes a concurrency slot, or a place in its queue.
    pub fn acquire_slot(&self) -> Acquire {
        self.st.borrow_mut().guard.acquire_slot()
    }

    /// A successful answer that took `took_ms`, for hedging at the p95.
    pub fn answered_in(&self, c: &CallState, took_ms: f64, now: f64) {
        self.st.borrow_mut().guard.answered_in(c, took_ms, now);
    }

    /// `client.breakers()`. Its refresh may turn a breaker whose open
    /// period has ended half-open before the timer that does so fires
    /// (`news.rs`): that transition is reported with the next news, as
    /// the timer's would be, not from inside `breakers()`.
    pub fn breakers(&self, now: f64) -> Vec<Snapshot> {
        self.st.borrow_mut().guard.snapshot(now)
    }

    pub fn next_id(&self) -> u64 {
        let mut st = self.st.borrow_mut();
        st.counters.0 += 1;
        st.counters.0
    }

    /// `close()` has been called.
    pub fn is_closed(&self) -> bool {
        self.st.borrow().closed
    }

    fn next_key(st: &mut State) -> u64 {
        st.counters.1 += 1;
        st.counters.1
    }

    /// Asks the policy core (for the call `request_id`), then does what its
    /// answer asks of the host: breaker events, news for the other tabs.
    pub(super) fn decide<R>(&self, request_id: &str, ask: impl FnOnce(&mut Guard) -> R) -> R {
        let answer = ask(&mut self.st.borrow_mut().guard);
        self.flush(request_id, true);
        answer
    }

    /// `n` attempts in flight that took no slot hold one each until they
    /// end (each then [`Engine::release_slot`]).
    pub fn hold_slots(&self, n: u32) {
        self.st.borrow_mut().guard.hold_slots(n);
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

    /// The call, holding its key's probe permit, waits for another tab's
    /// probe (`Guard::watch_probe`): None when the key is no longer
    /// half-open.
    pub(super) fn watch_probe(&self, c: &CallState) -> Option<ProbeWaiter> {
        self.st.borrow_mut().guard.watch_probe(c)
    }

    /// Parks a call waiting for a half-open probe until the probe's
    /// outcome opens its gate (see [`Engine::wake_probe_waiters`]).
    pub(super) fn park_probe_wait(&self, id: ProbeWaiter, gate: Gate) {
        self.st.borrow_mut().probe_waits.insert(id, gate);
    }

    /// The call stops waiting for the probe (released, aborted, out of
    /// time): forgotten here and in the key's queue.
    pub(super) fn unpark_probe_wait(&self, c: &CallState, id: ProbeWaiter) {
        let mut st = self.st.borrow_mut();
        st.probe_waits.remove(&id);
        st.guard.stop_waiting(c, id);
    }

    /// Opens the gates of the waiters the policy core released, in its
    /// order (the executor polls them in that order: each asks again).
    fn wake_probe_waiters(&self) {
        let released = self.st.borrow_mut().guard.drain_released();
        for id in &released {
            let gate = self.st.borrow_mut().probe_waits.remove(id);
            if let Some(g) = gate {
                g.open(Wake::Done);
            }
        }
    }

    /// The flight in progress under `key`, unless it was cancelled (its
    /// last caller aborted: it is ending, and a new caller starts a flight
    /// of its own instead of inheriting the abort).
    pub(super) fn flight(&self, key: &str) -> Option<Rc<Flight>> {
        let st = self.st.borrow();
        st.flights
            .get(key)
            .filter(|f| !f.cancel.is_cancelled())
            .cloned()
    }

    /// `flight` is in progress under `key`.
    pub(super) fn add_flight(&self, key: String, flight: Rc<Flight>) {
        self.st.borrow_mut().flights.insert(key, flight);
    }

    /// The flight `f` under `key` has ended (unless another took its place).
    pub(super) fn end_flight(&self, key: &str, f: &Rc<Flight>) {
        let mut st = self.st.borrow_mut();
        if st.flights.get(key).is_some_and(|x| Rc::ptr_eq(x, f)) {
            st.flights.remove(key);
        }
    }

    /// Registers `cancel` as a call in progress of `layer`, which `close()`
    /// (of that client, one it derives from, or the engine) cancels until
    /// it leaves; None when the client is closed already.
    pub(super) fn enter(&self, layer: &Rc<Layer>, cancel: &Cancel) -> Option<u64> {
        let mut st = self.st.borrow_mut();
        if st.closed || layer.is_closed() {
            return None;
        }
        let id = Engine::next_key(&mut st);
        st.calls.insert(id, (layer.clone(), cancel.clone()));
        Some(id)
    }

    /// The call `id` of [`Engine::enter`] is no longer in progress.
    pub(super) fn leave(&self, id: u64) {
        self.st.borrow_mut().calls.remove(&id);
    }

    /// Runs `work` (a call's part after its network part, such as an async
    /// `validate`) as a call in progress of `layer`: `close()` cancels
    /// `cancel`, which `work` waits on; a closed client's at once.
    pub async fn tracked<F: std::future::Future>(
        &self,
        layer: &Rc<Layer>,
        cancel: &Cancel,
        work: F,
    ) -> F::Output {
        let id = self.enter(layer, cancel);
        if id.is_none() {
            cancel.cancel(CancelReason::Closed);
        }
        let out = work.await;
        if let Some(id) = id {
            self.leave(id);
        }
        out
    }

    /// `close()`: cancels every call in progress; later calls are refused.
    pub fn close(&self) {
        let calls = {
            let mut st = self.st.borrow_mut();
            st.closed = true;
            st.calls.take_values()
        };
        if let Some(x) = self.crosstab.get() {
            x.close();
        }
        self.half_open.borrow_mut().take();
        self.memory.clear();
        for (_, c) in calls {
            c.cancel(CancelReason::Closed);
        }
    }

    /// `close()` of a derived client: cancels the calls of `layer` and of
    /// the clients derived from it (their later calls are refused); the
    /// engine and the other clients go on.
    pub fn close_layer(&self, layer: &Layer) {
        for id in layer.close() {
            self.events.off(id);
        }
        let calls: Vec<Cancel> = self
            .st
            .borrow()
            .calls
            .values()
            .filter(|(l, _)| l.within(layer))
            .map(|(_, c)| c.clone())
            .collect();
        for c in calls {
            c.cancel(CancelReason::Closed);
        }
    }
}
