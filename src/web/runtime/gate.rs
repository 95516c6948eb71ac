//! One-shot gates, the one timed wait on them, and a race of two futures.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::listen::once;
use crate::web::host::{clear_timeout, now_ms, set_timeout, timer_fired};

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The timer ran out.
    Timer,
    /// The caller aborted or the client closed.
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

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

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

    /// Whether both are the same gate.
    pub fn same(&self, other: &Gate) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    pub fn wait(&self) -> GateFuture {
        GateFuture(self.clone())
    }

    /// The one timed wait: ends when the gate opens, or with
    /// [`Wake::Timer`] after `ms` when given. The timer is armed now, and
    /// cleared when the wait is dropped, whether it ended or not. Its
    /// firing tells the clock that `ms` have passed.
    pub fn wait_at_most(&self, ms: Option<f64>) -> Timed {
        Timed {
            _timer: ms.map(|ms| {
                let g = self.clone();
                let ms = clamp_ms(ms);
                let set_at = now_ms();
                HostTimer::new(ms, move || {
                    timer_fired(set_at, set_at + f64::from(ms));
                    g.open(Wake::Timer)
                })
            }),
            wait: self.wait(),
        }
    }
}

/// `ms` from now: a wait on a gate of its own, which only its timer opens.
pub fn sleep(ms: f64) -> Timed {
    Gate::new().wait_at_most(Some(ms))
}

#[must_use = "futures do nothing unless awaited"]
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

/// A gate's wait under a host timer (see [`Gate::wait_at_most`]); dropping
/// it clears the timer, so a dropped wait never opens its gate.
#[must_use = "dropping a timed wait clears its timer"]
pub struct Timed {
    _timer: Option<HostTimer>,
    wait: GateFuture,
}

/// A host `setTimeout` of its own, cleared when dropped. (What gloo-timers'
/// `Timeout` did, on the `setTimeout`/`clearTimeout` bindings the alarms
/// use: one pair of imports instead of two.)
struct HostTimer {
    id: JsValue,
    _callback: Closure<dyn FnMut()>,
}

impl HostTimer {
    fn new(ms: u32, f: impl FnOnce() + 'static) -> HostTimer {
        let callback = once(f);
        HostTimer {
            id: set_timeout(callback.as_ref().unchecked_ref(), ms),
            _callback: callback,
        }
    }
}

impl Drop for HostTimer {
    fn drop(&mut self) {
        clear_timeout(&self.id);
    }
}

impl Future for Timed {
    type Output = Wake;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Wake> {
        Pin::new(&mut self.wait).poll(cx)
    }
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

/// Which of two futures finished first.
pub enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures, the first one first; ends with the first to finish.
/// The other is dropped unfinished: a promise it awaited may still settle
/// later, harmlessly (js-sys keeps its callbacks valid until then).
#[must_use = "futures do nothing unless awaited"]
pub struct Race<A, B>(pub A, pub B);

impl<A: Future + Unpin, B: Future + Unpin> Future for Race<A, B> {
    type Output = Either<A::Output, B::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(a) = Pin::new(&mut self.0).poll(cx) {
            return Poll::Ready(Either::Left(a));
        }
        Pin::new(&mut self.1).poll(cx).map(Either::Right)
    }
}
