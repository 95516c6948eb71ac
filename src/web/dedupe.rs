//! Identical concurrent GETs share one network call.
//!
//! The first caller starts a *flight*: the call runs with no caller signal
//! of its own, and every caller (the first included) waits on it in its
//! own seat, which the outcome fills with that caller's share (the same
//! parsed value for all, or a Response each). A caller's abort detaches
//! only that caller; the network call is aborted when the last caller
//! still waiting has aborted.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortSignal, Response};

use super::cancel::{Cancel, CancelReason};
use super::errors::{CallError, ErrorKind};
use super::host::now_ms;
use super::runtime::{Gate, OnAbort, Wake};
use crate::policy::guard::Phase;

type Outcome = Result<JsValue, JsValue>;

/// A caller waiting on a flight, for the error it gets if it stops waiting
/// (its abort, or its own deadline): its own request id and time, the
/// shared call's attempts.
pub struct Waiter {
    pub request_id: String,
    pub started_ms: f64,
    /// A joiner's deadline; None for the first caller, whose deadline is
    /// the network call's own.
    pub deadline_ms: Option<f64>,
    /// Which call it is, for its error's message (`policy::href::described`).
    pub about: String,
}

/// One caller's place on a flight: the gate the outcome opens, and the
/// caller's own share of it.
pub struct Seat {
    gate: Gate,
    share: RefCell<Option<Outcome>>,
}

#[derive(Default)]
struct FlightState {
    /// The callers still waiting.
    seats: Vec<Rc<Seat>>,
    result: Option<Outcome>,
}

/// One shared network call and the callers waiting on it.
#[derive(Default)]
pub struct Flight {
    /// The network call's own cancel state.
    pub cancel: Cancel,
    /// Each caller gets its own clone of a Response (`responseType:
    /// 'response'`): a body can be read once.
    copy_response: bool,
    st: RefCell<FlightState>,
}

impl Flight {
    pub fn new(copy_response: bool) -> Flight {
        Flight {
            copy_response,
            ..Flight::default()
        }
    }

    /// A place for one more caller, taken before it joins.
    pub fn seat(&self) -> Rc<Seat> {
        let seat = Rc::new(Seat {
            gate: Gate::new(),
            share: RefCell::new(None),
        });
        self.st.borrow_mut().seats.push(seat.clone());
        seat
    }

    /// A caller stops waiting; true when it was the last and the network
    /// call has not ended.
    fn leave(&self, seat: &Rc<Seat>) -> bool {
        let mut st = self.st.borrow_mut();
        st.seats.retain(|s| !Rc::ptr_eq(s, seat));
        st.seats.is_empty() && st.result.is_none()
    }

    /// Whether callers are waiting on the flight (a caller whose abort has
    /// opened its gate is no longer waiting, even before it has left).
    fn has_waiters(&self) -> bool {
        self.st.borrow().seats.iter().any(|s| !s.gate.is_open())
    }

    /// A caller's share of the outcome: the value itself, or a clone of
    /// the Response (before anyone reads it).
    fn share(&self, outcome: &Outcome) -> Outcome {
        match outcome {
            Ok(v) if self.copy_response => Ok(Response::clone(v.unchecked_ref())
                .map(JsValue::from)
                .unwrap_or_else(|_| v.clone())),
            other => other.clone(),
        }
    }

    /// Hands the network call's outcome to every caller still waiting: the
    /// last one gets the value itself, the others their share. A caller
    /// that has just aborted gets nothing (a Response copy it would never
    /// read would hold the whole body).
    pub fn finish(&self, outcome: Outcome) {
        let seats: Vec<Rc<Seat>> = {
            let mut st = self.st.borrow_mut();
            st.result = Some(outcome.clone());
            std::mem::take(&mut st.seats)
                .into_iter()
                .filter(|s| !s.gate.is_open())
                .collect()
        };
        let mut outcome = Some(outcome);
        let n = seats.len();
        for (i, seat) in seats.into_iter().enumerate() {
            let mine = match outcome.take_if(|_| i + 1 == n) {
                Some(last) => last,
                None => outcome
                    .as_ref()
                    .map_or(Err(JsValue::UNDEFINED), |o| self.share(o)),
            };
            *seat.share.borrow_mut() = Some(mine);
            seat.gate.open(Wake::Done);
        }
    }

    /// Waits on `seat` for the shared outcome, or for this caller's own abort.
    pub async fn join(
        self: Rc<Self>,
        seat: Rc<Seat>,
        signal: Option<AbortSignal>,
        me: Waiter,
    ) -> Outcome {
        if let Some(r) = &self.st.borrow().result {
            return self.share(r);
        }
        let reason = Rc::new(RefCell::new(JsValue::UNDEFINED));
        let _link = signal.as_ref().and_then(|s| {
            let (seat, r) = (seat.clone(), reason.clone());
            OnAbort::new(s, move |why| {
                *r.borrow_mut() = why;
                seat.gate.open(Wake::Cancelled);
            })
        });
        let deadline = me.deadline_ms.map(|ms| ms - (now_ms() - me.started_ms));
        let wake = seat.gate.wait_at_most(deadline).await;
        if wake == Wake::Done {
            return seat.share.take().unwrap_or(Err(JsValue::UNDEFINED));
        }
        let reason = reason.borrow().clone();
        if self.leave(&seat) {
            self.cancel.cancel(CancelReason::Caller(reason.clone()));
        }
        let kind = if wake == Wake::Timer {
            ErrorKind::Timeout {
                phase: Phase::Deadline,
            }
        } else {
            ErrorKind::Abort { reason }
        };
        let elapsed = now_ms() - me.started_ms;
        let e = CallError::new(kind)
            .stamped(&me.request_id, self.cancel.attempts(), elapsed)
            .about(me.about);
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
    /// The caller's seat on the flight, left when the network call ends.
    pub seat: Rc<Seat>,
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
                        super::runtime::spawn(async move { flight.finish(n.await) });
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
            // The flight was cancelled: by the last caller leaving (this
            // one), or by close(), which leaves the others seated; they get
            // the network call's outcome (its AbortError).
            if self.flight.has_waiters() {
                self.flight.finish(outcome);
            }
            return Poll::Ready(answer);
        }
        self.flight.leave(&self.seat);
        if self.flight.has_waiters() {
            let mine = self.flight.share(&outcome);
            self.flight.finish(outcome);
            return Poll::Ready(mine);
        }
        Poll::Ready(outcome)
    }
}
