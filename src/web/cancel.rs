//! Waiting that cancellation reaches: a one-shot gate that the first of
//! several sources (a timer, an abort signal, a freed slot) opens, and the
//! per-call cancel state that links the caller's signal and `close()` to the
//! attempt in flight and to any queue wait or backoff sleep.
//!
//! Every listener and timer here is owned by a guard and removed on drop:
//! nothing is leaked with `Closure::forget`, whatever path a call takes.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal};

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

    /// Registers the attempt's controller (None when the attempt ends).
    pub fn set_attempt(&self, ctl: Option<AbortController>) {
        self.0.borrow_mut().attempt = ctl;
    }

    /// Registers the gate of a wait (None when the wait ends).
    pub fn set_gate(&self, gate: Option<Gate>) {
        self.0.borrow_mut().gate = gate;
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
