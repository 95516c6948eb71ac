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
use super::errors::{CallError, ErrorKind};
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
            stop.fire(false);
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

    /// Registers an attempt's stop switch until the guard is dropped.
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
    /// most `ms`, and no longer than the call lasts: the one wait of a call
    /// on something other than a future. `_keep` (the listener that opens
    /// the gate) lives as long as the wait.
    pub async fn wait_on<K>(&self, gate: &Gate, ms: f64, _keep: K) -> Wake {
        self.set_gate(Some(gate.clone()));
        let wake = {
            let _timer = gate_timer(gate, ms);
            gate.wait().await
        };
        self.set_gate(None);
        wake
    }

    /// Waits `ms`, or less if the call is cancelled first.
    pub async fn sleep(&self, ms: f64) -> Wake {
        match self.within(ms, std::future::pending::<()>()).await {
            Ok(()) => Wake::Done,
            Err(wake) => wake,
        }
    }

    /// Runs `work` for at most `ms`, and no longer than the call lasts:
    /// `Err(Wake::Timer)` when the time ran out first, `Err(Wake::Cancelled)`
    /// when the call was cancelled first (`work` is dropped unfinished).
    pub async fn within<F: Future>(&self, ms: f64, work: F) -> Result<F::Output, Wake> {
        if self.is_cancelled() {
            return Err(Wake::Cancelled);
        }
        let gate = Gate::new();
        self.set_gate(Some(gate.clone()));
        let _timer = gate_timer(&gate, ms);
        let out = Race(std::pin::pin!(work), gate.wait()).await;
        self.set_gate(None);
        match out {
            Either::Left(v) => Ok(v),
            Either::Right(wake) => Err(wake),
        }
    }
}

/// An attempt registered with its call's cancel state.
#[must_use]
pub struct Attached {
    cancel: Cancel,
    stop: Stop,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let mut st = self.cancel.0.borrow_mut();
        st.attempts_live
            .retain(|s| !Rc::ptr_eq(&s.gate.0, &self.stop.gate.0));
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

/// An attempt's stop switch: its timer and a cancel both abort the request
/// (the host's fetch sees its signal) and open the gate the attempt also
/// waits on, so the attempt ends even when a fetch stand-in ignores the
/// signal and never settles.
#[derive(Clone)]
pub struct Stop {
    ctl: AbortController,
    gate: Gate,
    timed_out: Rc<Cell<bool>>,
}

impl Stop {
    pub fn new() -> Result<Stop, JsValue> {
        Ok(Stop {
            ctl: AbortController::new()?,
            gate: Gate::new(),
            timed_out: Rc::new(Cell::new(false)),
        })
    }

    /// Stops the attempt: it is not wanted any more (a hedge answered).
    pub fn abort(&self) {
        self.fire(false);
    }

    pub fn signal(&self) -> AbortSignal {
        self.ctl.signal()
    }

    /// Whether the attempt's timer stopped it.
    pub fn timed_out(&self) -> bool {
        self.timed_out.get()
    }

    /// Opens when the attempt is stopped, by its timer or a cancel.
    pub fn wait(&self) -> GateFuture {
        self.gate.wait()
    }

    fn fire(&self, timeout: bool) {
        if self.gate.is_open() {
            return;
        }
        self.timed_out.set(timeout);
        self.gate.open(if timeout {
            Wake::Timer
        } else {
            Wake::Cancelled
        });
        self.ctl.abort();
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
}

impl Drop for EventLink {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.event, self.closure.as_ref().unchecked_ref());
    }
}

/// A caller's signal with the calls waiting on its abort. However many
/// calls share one signal, it gets one listener: Node warns
/// (`MaxListenersExceededWarning`) past ten on one signal.
struct Watched {
    signal: AbortSignal,
    _link: EventLink,
    calls: Vec<(u64, OnAbortFn)>,
}

type OnAbortFn = Box<dyn FnOnce(JsValue)>;

#[derive(Default)]
struct Watch {
    next_id: u64,
    signals: Vec<Watched>,
}

thread_local! {
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
}

/// A call's interest in a caller signal's abort, dropped when the call no
/// longer cares; the signal's listener goes with the last one.
pub struct OnAbort {
    id: u64,
    signal: AbortSignal,
}

impl OnAbort {
    /// Calls `f` with the signal's reason once `signal` aborts (at once if
    /// it already has; then there is nothing to drop).
    pub fn new(signal: &AbortSignal, f: impl FnOnce(JsValue) + 'static) -> Option<OnAbort> {
        if is_aborted(signal) {
            f(reason(signal));
            return None;
        }
        WATCH.with_borrow_mut(|w| {
            w.next_id += 1;
            let id = w.next_id;
            let f: OnAbortFn = Box::new(f);
            match w.signals.iter_mut().find(|s| s.signal == *signal) {
                Some(s) => s.calls.push((id, f)),
                None => {
                    let s = signal.clone();
                    let link = EventLink::once(signal, "abort", move || aborted(&s));
                    w.signals.push(Watched {
                        signal: signal.clone(),
                        _link: link,
                        calls: vec![(id, f)],
                    });
                }
            }
            Some(OnAbort {
                id,
                signal: signal.clone(),
            })
        })
    }
}

impl Drop for OnAbort {
    fn drop(&mut self) {
        // Removed outside the borrow: dropping the link calls into the host.
        let gone = WATCH.with_borrow_mut(|w| {
            let i = w.signals.iter().position(|s| s.signal == self.signal)?;
            let s = w.signals.get_mut(i)?;
            s.calls.retain(|(id, _)| *id != self.id);
            s.calls.is_empty().then(|| w.signals.swap_remove(i))
        });
        drop(gone);
    }
}

/// A watched signal fired: every call on it hears, each once.
fn aborted(signal: &AbortSignal) {
    let watched = WATCH.with_borrow_mut(|w| {
        let i = w.signals.iter().position(|s| s.signal == *signal)?;
        Some(w.signals.swap_remove(i))
    });
    if let Some(w) = watched {
        let why = reason(signal);
        for (_, f) in w.calls {
            f(why.clone());
        }
    }
}

/// `signal.aborted`, read so that a hostile signal (a Proxy whose getter
/// throws) cannot throw through wasm.
pub fn is_aborted(signal: &AbortSignal) -> bool {
    get(signal, "aborted").is_ok_and(|v| v.is_truthy())
}

/// `signal.reason`, read as safely.
pub fn reason(signal: &AbortSignal) -> JsValue {
    get(signal, "reason").unwrap_or(JsValue::UNDEFINED)
}

/// What a due alarm does.
enum Action {
    /// An attempt's timeout: stop it as timed out.
    Stop(Stop),
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
            Action::Stop(stop) => stop.fire(true),
            Action::Run(f) => f(),
        }
    }
}

/// A timer on the module's one host timer, removed when dropped.
pub struct Alarm(u64);

impl Alarm {
    /// In `ms`, stops the attempt as timed out.
    pub fn stop(ms: f64, stop: &Stop) -> Alarm {
        Alarm::at(ms, Action::Stop(stop.clone()))
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
