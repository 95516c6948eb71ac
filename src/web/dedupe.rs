//! Identical concurrent GETs share one network call.
//!
//! The first caller starts a *flight*: the call runs with no caller signal
//! of its own, and every caller (the first included) waits on it through
//! its own gate. A caller's abort detaches only that caller; the network
//! call is aborted when the last caller still waiting has aborted.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::cancel::{Cancel, CancelReason, EventLink, Gate, Wake};
use super::errors::{CallError, ErrorKind};
use super::host::now_ms;

type Outcome = Result<JsValue, JsValue>;

/// A caller waiting on a flight, for the AbortError it gets if it stops
/// waiting: its own request id and time, the shared call's attempts.
pub struct Waiter {
    pub request_id: String,
    pub started_ms: f64,
}

#[derive(Default)]
struct FlightState {
    waiting: u32,
    gates: Vec<Gate>,
    result: Option<Outcome>,
}

/// One shared network call and the callers waiting on it.
#[derive(Default)]
pub struct Flight {
    /// The network call's own cancel state.
    pub cancel: Cancel,
    st: RefCell<FlightState>,
}

impl Flight {
    /// Hands the network call's outcome to every caller still waiting.
    pub fn finish(&self, outcome: Outcome) {
        let gates = {
            let mut st = self.st.borrow_mut();
            st.result = Some(outcome);
            std::mem::take(&mut st.gates)
        };
        for g in gates {
            g.open(Wake::Done);
        }
    }

    /// Whether callers other than the first are waiting on the flight.
    pub fn joined(&self) -> bool {
        self.st.borrow().waiting > 1
    }

    /// Waits for the shared outcome, or for this caller's own abort.
    pub async fn join(self: Rc<Self>, signal: Option<AbortSignal>, me: Waiter) -> Outcome {
        let gate = Gate::new();
        {
            let mut st = self.st.borrow_mut();
            if let Some(r) = &st.result {
                return r.clone();
            }
            st.waiting += 1;
            st.gates.push(gate.clone());
        }
        let reason = Rc::new(RefCell::new(JsValue::UNDEFINED));
        let _link = signal.as_ref().and_then(|s| {
            let (g, r, sig) = (gate.clone(), reason.clone(), s.clone());
            EventLink::abort(s, move || {
                *r.borrow_mut() = sig.reason();
                g.open(Wake::Cancelled);
            })
        });
        if gate.wait().await != Wake::Cancelled {
            return self
                .st
                .borrow()
                .result
                .clone()
                .unwrap_or(Err(JsValue::UNDEFINED));
        }
        let reason = reason.borrow().clone();
        let last = {
            let mut st = self.st.borrow_mut();
            st.waiting = st.waiting.saturating_sub(1);
            st.waiting == 0 && st.result.is_none()
        };
        if last {
            self.cancel.cancel(CancelReason::Caller(reason.clone()));
        }
        let mut e = CallError::new(ErrorKind::Abort { reason });
        e.request_id = me.request_id;
        e.attempts = self.cancel.attempts();
        e.elapsed_ms = (now_ms() - me.started_ms).max(0.0);
        Err(e.to_js())
    }
}

/// The first caller of a flight: drives the network call itself rather
/// than spawning it as a task of its own (a task and a wake-up less per
/// call), and waits on the flight like every other caller. When the call
/// ends it takes the outcome as it is, and hands it to the flight only if
/// others joined (most calls have no one to share with). If the caller
/// stops waiting first (its abort) while others are still joined, the
/// network call is handed to a task so they get their outcome; if its abort
/// was the last, the aborted network call is all its own, and it answers
/// once that call has ended (a few microtasks), so its slot is free when it
/// settles.
pub struct Lead {
    /// The network call; it has left the engine's flights when it ends.
    pub network: Option<Pin<Box<dyn Future<Output = Outcome>>>>,
    pub join: Pin<Box<dyn Future<Output = Outcome>>>,
    pub flight: Rc<Flight>,
    /// The caller's answer, held while its aborted network call ends.
    pub answer: Option<Outcome>,
}

impl Future for Lead {
    type Output = Outcome;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        // The caller first: a signal aborted before the start must stop
        // the network call before it sends anything.
        if self.answer.is_none() {
            if let Poll::Ready(out) = self.join.as_mut().poll(cx) {
                if self.network.is_none() || !self.flight.cancel.is_cancelled() {
                    if let Some(n) = self.network.take() {
                        let flight = self.flight.clone();
                        super::task::spawn(async move { flight.finish(n.await) });
                    }
                    return Poll::Ready(out);
                }
                self.answer = Some(out);
            }
        }
        let outcome = match self.network.as_mut().map(|n| n.as_mut().poll(cx)) {
            Some(Poll::Pending) => return Poll::Pending,
            Some(Poll::Ready(outcome)) => outcome,
            None => return self.join.as_mut().poll(cx),
        };
        self.network = None;
        if let Some(answer) = self.answer.take() {
            // Nobody else was waiting: the flight was cancelled with the last.
            return Poll::Ready(answer);
        }
        if self.flight.joined() {
            self.flight.finish(outcome.clone());
        }
        Poll::Ready(outcome)
    }
}
