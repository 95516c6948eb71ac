//! Waiting that cancellation reaches: a one-shot gate that the first of
//! several sources (a timer, an abort signal, a freed slot) opens, and the
//! per-call cancel state that links the caller's signal and `close()` to the
//! attempt in flight and to any queue wait or backoff sleep.
//!
//! Every listener and timer here is owned by a guard and removed on drop:
//! nothing is leaked with `Closure::forget`, whatever path a call takes.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal};

use super::convert::get;
use super::host::{clear_timeout, now_ms, set_timeout};

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The timer ran out.
    Timer,
    /// The caller aborted or the client closed (see [`Cancel::reason`]).
    Cancelled,
    /// A concurrency slot was handed to this waiter.
    Granted,
    /// The shared network call this caller joined has settled.
    Done,
}

struct GateState {
    value: Option<Wake>,
    waker: Option<Waker>,
}

/// A one-shot: the first `open` wins, later ones are ignored.
#[derive(Clone)]
pub struct Gate(Rc<RefCell<GateState>>);

impl Gate {
    pub fn new() -> Self {
        Gate(Rc::new(RefCell::new(GateState {
            value: None,
            waker: None,
        })))
    }

    pub fn open(&self, wake: Wake) {
        let waker = {
            let mut st = self.0.borrow_mut();
            if st.value.is_some() {
                return;
            }
            st.value = Some(wake);
            st.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether it has been opened (by anything).
    pub fn is_open(&self) -> bool {
        self.0.borrow().value.is_some()
    }

    pub fn wait(&self) -> GateFuture {
        GateFuture(self.clone())
    }
}

pub struct GateFuture(Gate);

impl Future for GateFuture {
    type Output = Wake;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Wake> {
        let mut st = (self.0).0.borrow_mut();
        match st.value {
            Some(v) => Poll::Ready(v),
            None => {
                st.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A timer that opens a gate; cleared when dropped.
pub fn gate_timer(gate: &Gate, ms: f64) -> Timeout {
    let g = gate.clone();
    Timeout::new(clamp_ms(ms), move || g.open(Wake::Timer))
}

/// Milliseconds for `setTimeout`: rounded up so a timer never fires early,
/// clamped into the range browsers accept.
pub fn clamp_ms(ms: f64) -> u32 {
    let ms = ms.ceil();
    if ms.is_nan() || ms <= 0.0 {
        0
    } else if ms >= 2_147_483_647.0 {
        2_147_483_647
    } else {
        ms as u32
    }
}

/// What cancelled a call.
#[derive(Clone)]
pub enum CancelReason {
    /// The caller's signal aborted; its `reason`.
    Caller(JsValue),
    /// `client.close()`.
    Closed,
}

#[derive(Default)]
struct CancelState {
    reason: Option<CancelReason>,
    /// The controller of the attempt in flight, aborted on cancel.
    attempt: Option<AbortController>,
    /// The gate of the wait in progress (queue or backoff), opened on cancel.
    gate: Option<Gate>,
    /// Attempts begun so far (a shared call's joiners report it too).
    attempts: u32,
}

/// The cancel state of one call. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Cancel(Rc<RefCell<CancelState>>);

impl Cancel {
    pub fn reason(&self) -> Option<CancelReason> {
        self.0.borrow().reason.clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.borrow().reason.is_some()
    }

    /// Cancels the call: aborts its attempt and wakes its wait. First wins.
    pub fn cancel(&self, reason: CancelReason) {
        let (attempt, gate) = {
            let mut st = self.0.borrow_mut();
            if st.reason.is_some() {
                return;
            }
            st.reason = Some(reason);
            (st.attempt.take(), st.gate.take())
        };
        if let Some(ctl) = attempt {
            ctl.abort();
        }
        if let Some(g) = gate {
            g.open(Wake::Cancelled);
        }
    }

    /// Counts an attempt about to be made; returns its number (1 for the first).
    pub fn begin_attempt(&self) -> u32 {
        let mut st = self.0.borrow_mut();
        st.attempts += 1;
        st.attempts
    }

    /// Attempts begun so far.
    pub fn attempts(&self) -> u32 {
        self.0.borrow().attempts
    }

    /// Registers the attempt's controller (None when the attempt ends).
    pub fn set_attempt(&self, ctl: Option<AbortController>) {
        self.0.borrow_mut().attempt = ctl;
    }

    /// Registers the gate of a wait (None when the wait ends). A call
    /// cancelled before its wait began (by a listener, during an await)
    /// finds the gate opened at once.
    pub fn set_gate(&self, gate: Option<Gate>) {
        let cancelled = {
            let mut st = self.0.borrow_mut();
            st.gate = gate.clone();
            st.reason.is_some()
        };
        if let (true, Some(g)) = (cancelled, gate) {
            g.open(Wake::Cancelled);
        }
    }

    /// Waits `ms`, or less if the call is cancelled first.
    pub async fn sleep(&self, ms: f64) -> Wake {
        if self.is_cancelled() {
            return Wake::Cancelled;
        }
        let gate = Gate::new();
        self.set_gate(Some(gate.clone()));
        let _timer = gate_timer(&gate, ms);
        let wake = gate.wait().await;
        self.set_gate(None);
        wake
    }
}

/// A listener for one event of one target, removed when dropped.
pub struct EventLink {
    target: web_sys::EventTarget,
    event: &'static str,
    closure: Closure<dyn FnMut()>,
}

impl EventLink {
    /// Calls `f` once, the first time `target` fires `event`.
    pub fn once(
        target: &web_sys::EventTarget,
        event: &'static str,
        f: impl FnOnce() + 'static,
    ) -> EventLink {
        let mut once = Some(f);
        let closure = Closure::<dyn FnMut()>::new(move || {
            if let Some(f) = once.take() {
                f();
            }
        });
        let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
        EventLink {
            target: target.clone(),
            event,
            closure,
        }
    }

    /// Calls `on_abort` once when `signal` aborts (at once if it already has).
    pub fn abort(signal: &AbortSignal, on_abort: impl FnOnce() + 'static) -> Option<EventLink> {
        if signal.aborted() {
            on_abort();
            return None;
        }
        Some(EventLink::once(signal.unchecked_ref(), "abort", on_abort))
    }
}

impl Drop for EventLink {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.event, self.closure.as_ref().unchecked_ref());
    }
}

/// What a due alarm does.
enum Action {
    /// An attempt's timeout: flag the attempt as timed out and abort it.
    Abort {
        ctl: AbortController,
        timed_out: Rc<Cell<bool>>,
    },
    /// Anything else (a breaker's open period ending).
    Run(Box<dyn FnOnce()>),
}

struct Due {
    id: u64,
    at: f64,
    action: Action,
}

/// Every timer of the module (attempt timeouts, breaker periods) on one
/// host timer, armed for the earliest. Attempts usually end long before
/// their timeout, so a call costs no `setTimeout`/`clearTimeout` pair and
/// no closure: the host timer is re-armed only when a new attempt is due
/// before the armed time, or when it fires. It is never cleared when idle (unref'd in Node, so it
/// keeps no process alive); firing with nothing due costs one scan.
#[derive(Default)]
struct Alarms {
    next_id: u64,
    due: Vec<Due>,
    /// The host timer's id and its time.
    armed: Option<(JsValue, f64)>,
}

thread_local! {
    static ALARMS: RefCell<Alarms> = RefCell::new(Alarms::default());
    static ON_ALARM: Closure<dyn FnMut()> = Closure::new(fire_alarms);
}

impl Alarms {
    /// Arms the host timer for `at` unless it is armed for no later.
    fn arm(&mut self, at: f64, now: f64) {
        if let Some((id, t)) = &self.armed {
            if *t <= at {
                return;
            }
            clear_timeout(id);
        }
        let id = ON_ALARM.with(|f| set_timeout(f.as_ref().unchecked_ref(), clamp_ms(at - now)));
        if let Ok(unref) = get(&id, "unref").and_then(|f| f.dyn_into::<js_sys::Function>()) {
            let _ = unref.call0(&id);
        }
        self.armed = Some((id, at));
    }
}

fn fire_alarms() {
    let now = now_ms();
    let expired: Vec<Due> = ALARMS.with(|a| {
        let mut a = a.borrow_mut();
        a.armed = None;
        let (expired, pending) = std::mem::take(&mut a.due)
            .into_iter()
            .partition(|d| d.at <= now);
        a.due = pending;
        if let Some(next) = a.due.iter().map(|d| d.at).reduce(f64::min) {
            a.arm(next, now);
        }
        expired
    });
    for d in expired {
        match d.action {
            Action::Abort { ctl, timed_out } => {
                timed_out.set(true);
                ctl.abort();
            }
            Action::Run(f) => f(),
        }
    }
}

/// A timer on the module's one host timer, removed when dropped.
pub struct Alarm(u64);

impl Alarm {
    /// In `ms`, sets `timed_out` and aborts `ctl`.
    pub fn new(ms: f64, ctl: &AbortController, timed_out: &Rc<Cell<bool>>) -> Alarm {
        Alarm::at(
            ms,
            Action::Abort {
                ctl: ctl.clone(),
                timed_out: timed_out.clone(),
            },
        )
    }

    /// In `ms`, calls `f`.
    pub fn run(ms: f64, f: impl FnOnce() + 'static) -> Alarm {
        Alarm::at(ms, Action::Run(Box::new(f)))
    }

    fn at(ms: f64, action: Action) -> Alarm {
        let now = now_ms();
        let at = now + ms;
        ALARMS.with(|a| {
            let mut a = a.borrow_mut();
            a.next_id += 1;
            let id = a.next_id;
            a.due.push(Due { id, at, action });
            a.arm(at, now);
            Alarm(id)
        })
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        ALARMS.with(|a| a.borrow_mut().due.retain(|d| d.id != self.0));
    }
}
