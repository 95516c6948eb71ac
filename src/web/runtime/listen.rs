//! Listeners on host event targets, each owned by a guard.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use crate::web::convert::get;

/// A listener for one event of one target, removed when dropped.
#[must_use = "the listener is removed when this is dropped"]
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
        let closure = once(f);
        let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
        EventLink {
            target: target.clone(),
            event,
            closure,
        }
    }
}

/// A host callback that runs `f` the first time it is called and does
/// nothing after (an event listener, a timer).
pub(super) fn once(f: impl FnOnce() + 'static) -> Closure<dyn FnMut()> {
    let mut f = Some(f);
    Closure::new(move || {
        if let Some(f) = f.take() {
            f();
        }
    })
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
#[must_use = "the interest ends when this is dropped"]
pub struct OnAbort {
    id: u64,
    signal: AbortSignal,
}

impl OnAbort {
    /// Calls `f` with the signal's reason once `signal` aborts (at once if
    /// it already has; then there is nothing to drop).
    #[must_use = "the interest ends when the guard is dropped"]
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
