//! The per-call cancel state: links the caller's signal and `close()` to
//! the attempts in flight and to the wait in progress (queue, backoff,
//! probe lock, online), and is the one place a call waits on a gate
//! ([`Cancel::wait_on`], [`Cancel::within`] and [`Cancel::sleep`] are one
//! sequence: register the gate, arm its timer, await, unregister).
//!
//! The primitives (gates, timers, stop switches, listeners) are the
//! runtime's (`super::runtime`); this is what one call makes of them.

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::{Future, Pending};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::errors::{CallError, ErrorKind};
use super::runtime::{Either, Gate, OnAbort, Race, Stop, Timed, Wake};

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
    /// The attempts in flight (two or more while hedging), stopped on cancel.
    attempts_live: Vec<Stop>,
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
        let (attempts, gate) = {
            let mut st = self.0.borrow_mut();
            if st.reason.is_some() {
                return;
            }
            st.reason = Some(reason);
            (std::mem::take(&mut st.attempts_live), st.gate.take())
        };
        for stop in attempts {
            stop.abort();
        }
        if let Some(g) = gate {
            g.open(Wake::Cancelled);
        }
    }

    /// An attempt numbered `n` (1 for the first) is about to be made:
    /// what a call sharing this one's flight reports as its attempts.
    pub fn begin_attempt(&self, n: u32) {
        self.0.borrow_mut().attempts = n;
    }

    /// Attempts begun so far.
    pub fn attempts(&self) -> u32 {
        self.0.borrow().attempts
    }

    /// Cancels the call when the caller's `signal` aborts (at once if it
    /// has), for as long as the guard lives.
    pub fn follow(&self, signal: Option<&AbortSignal>) -> Option<OnAbort> {
        let cancel = self.clone();
        OnAbort::new(signal?, move |why| cancel.cancel(CancelReason::Caller(why)))
    }

    /// Registers an attempt's stop switch until the guard is dropped.
    #[must_use = "the attempt is detached from its call when the guard is dropped"]
    pub fn attach(&self, stop: &Stop) -> Attached {
        self.0.borrow_mut().attempts_live.push(stop.clone());
        Attached {
            cancel: self.clone(),
            stop: stop.clone(),
        }
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

    /// The AbortError of the cancelled call, carrying the signal's reason.
    pub fn abort_error(&self) -> CallError {
        let reason = match self.reason() {
            Some(CancelReason::Caller(r)) => r,
            Some(CancelReason::Closed) | None => JsValue::from_str("client closed"),
        };
        CallError::new(ErrorKind::Abort { reason })
    }

    /// Waits for `gate` (opened elsewhere: a freed slot, an event) for at
    /// most `ms`, and no longer than the call lasts.
    pub fn wait_on(&self, gate: &Gate, ms: f64) -> WaitOn<'_> {
        WaitOn(self.race(gate, ms, std::future::pending()))
    }

    /// Waits `ms`, or less if the call is cancelled first.
    pub fn sleep(&self, ms: f64) -> WaitOn<'_> {
        self.wait_on(&Gate::new(), ms)
    }

    /// Runs `work` for at most `ms`, and no longer than the call lasts:
    /// `Err(Wake::Timer)` when the time ran out first, `Err(Wake::Cancelled)`
    /// when the call was cancelled first (`work` is dropped unfinished).
    pub fn within<F: Future + Unpin>(&self, ms: f64, work: F) -> Within<'_, F> {
        self.race(&Gate::new(), ms, work)
    }

    /// The one wait of a call: `work` against `gate`, which the call's
    /// cancel and a timer of `ms` also open. A call already cancelled does
    /// not start `work`. A future of its own, not an `async fn`: one small
    /// `poll` per kind of work instead of a state machine inlined into the
    /// call loop at every wait.
    fn race<F: Future + Unpin>(&self, gate: &Gate, ms: f64, work: F) -> Within<'_, F> {
        let race = (!self.is_cancelled()).then(|| {
            self.set_gate(Some(gate.clone()));
            Race(work, gate.wait_at_most(Some(ms)))
        });
        Within { cancel: self, race }
    }
}

/// A call's wait on `work` (see [`Cancel::within`]); `race` is `None` when
/// the call was cancelled before it began.
#[must_use = "futures do nothing unless awaited"]
pub struct Within<'a, F> {
    cancel: &'a Cancel,
    race: Option<Race<F, Timed>>,
}

impl<F: Future + Unpin> Future for Within<'_, F> {
    type Output = Result<F::Output, Wake>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(race) = self.race.as_mut() else {
            return Poll::Ready(Err(Wake::Cancelled));
        };
        let out = match Pin::new(race).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Either::Left(v)) => Ok(v),
            Poll::Ready(Either::Right(wake)) => Err(wake),
        };
        self.cancel.set_gate(None);
        Poll::Ready(out)
    }
}

/// A call's wait on a gate alone (see [`Cancel::wait_on`]).
#[must_use = "futures do nothing unless awaited"]
pub struct WaitOn<'a>(Within<'a, Pending<Infallible>>);

impl Future for WaitOn<'_> {
    type Output = Wake;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Wake> {
        Pin::new(&mut self.0).poll(cx).map(|out| match out {
            Ok(never) => match never {},
            Err(wake) => wake,
        })
    }
}

/// An attempt registered with its call's cancel state.
#[must_use = "the attempt is detached from its call when this is dropped"]
pub struct Attached {
    cancel: Cancel,
    stop: Stop,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let mut st = self.cancel.0.borrow_mut();
        st.attempts_live.retain(|s| !s.same(&self.stop));
    }
}
