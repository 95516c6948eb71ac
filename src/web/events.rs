//! `client.on()`: the listeners of a client and the events they receive.
//!
//! An event is built only when its type has a listener, and what it says
//! is grouped by meaning ([`Event`]); [`Event::to_js`] writes it flat, as
//! the JS `StormguardEvent`, where a field an event does not carry is
//! absent, not `undefined`.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::call::Call;
use super::convert::Obj;

use crate::policy::breaker::State as BreakerState;

/// One event: its type and request id, and the groups it carries.
#[derive(Default)]
pub struct Event<'a> {
    pub kind: &'a str,
    /// `''` for events no call causes (a breaker turning half-open).
    pub request_id: &'a str,
    /// The call's method and URL, and the attempt it is at.
    pub call: Option<At<'a>>,
    pub times: Times,
    pub outcome: Outcome<'a>,
    /// The breaker key (and for 'breaker' its transition).
    pub breaker: Breaker<'a>,
}

#[derive(Clone, Copy)]
pub struct At<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub attempt: Option<u32>,
}

#[derive(Default)]
pub struct Times {
    pub elapsed_ms: Option<f64>,
    pub remaining_ms: Option<f64>,
    /// 'retry': the backoff chosen; 'wait': the wait.
    pub delay_ms: Option<f64>,
}

#[derive(Default)]
pub struct Outcome<'a> {
    pub status: Option<u16>,
    pub error_name: Option<&'a str>,
    pub reason: Option<&'a str>,
}

#[derive(Default)]
pub struct Breaker<'a> {
    pub key: Option<&'a str>,
    pub from: Option<BreakerState>,
    pub to: Option<BreakerState>,
}

impl Event<'_> {
    /// The JS shape: one flat object, a field the event does not carry
    /// absent. Every number goes out as an f64 (as JS has it).
    fn to_js(&self) -> JsValue {
        let o = Obj::new();
        let opt = |key: &'static str, value: Option<JsValue>| {
            if let Some(v) = value {
                o.set(key, v);
            }
        };
        let text = |s: Option<&str>| s.map(JsValue::from_str);
        let num = |n: Option<f64>| n.map(JsValue::from_f64);
        let state = |s: Option<BreakerState>| text(s.map(BreakerState::as_str));
        o.set("type", self.kind).set("requestId", self.request_id);
        opt("method", text(self.call.map(|c| c.method)));
        opt("url", text(self.call.map(|c| c.url)));
        let attempt = self.call.and_then(|c| c.attempt);
        opt("attempt", num(attempt.map(f64::from)));
        opt("elapsedMs", num(self.times.elapsed_ms));
        opt("remainingMs", num(self.times.remaining_ms));
        opt("delayMs", num(self.times.delay_ms));
        opt("reason", text(self.outcome.reason));
        opt("key", text(self.breaker.key));
        opt("from", state(self.breaker.from));
        opt("to", state(self.breaker.to));
        opt("errorName", text(self.outcome.error_name));
        opt("status", num(self.outcome.status.map(f64::from)));
        o.into_js()
    }
}

struct Listener {
    id: u32,
    kind: String,
    func: Function,
}

/// A client's listeners. Interior mutability of its own: a listener may
/// add or remove listeners while an event is being delivered.
#[derive(Default)]
pub struct Listeners {
    list: RefCell<Vec<Listener>>,
    last_id: Cell<u32>,
}

impl Listeners {
    /// Adds a listener of `kind`; returns its id for [`Listeners::off`].
    pub fn on(&self, kind: &str, func: Function) -> u32 {
        let id = self.last_id.get().wrapping_add(1);
        self.last_id.set(id);
        self.list.borrow_mut().push(Listener {
            id,
            kind: kind.to_string(),
            func,
        });
        id
    }

    pub fn off(&self, id: u32) {
        self.list.borrow_mut().retain(|l| l.id != id);
    }

    /// Calls `build` and every listener of `kind`, only if there is one.
    /// `build` is `dyn` so the body exists once, not once per event.
    pub fn emit<'a>(&self, kind: &'a str, request_id: &'a str, build: &dyn Fn(&mut Event<'a>)) {
        let funcs: Vec<Function> = self
            .list
            .borrow()
            .iter()
            .filter(|l| l.kind == kind)
            .map(|l| l.func.clone())
            .collect();
        if funcs.is_empty() {
            return;
        }
        let mut event = Event {
            kind,
            request_id,
            ..Event::default()
        };
        build(&mut event);
        let event = event.to_js();
        for f in funcs {
            // A listener that throws must not break the call.
            let _ = f.call1(&JsValue::NULL, &event);
        }
    }

    /// An event of `call` at its attempt `attempt`.
    pub fn emit_call<'a>(
        &self,
        kind: &'a str,
        call: &'a Call,
        attempt: u32,
        build: &dyn Fn(&mut Event<'a>),
    ) {
        self.emit(kind, &call.request_id, &|o| {
            o.call = Some(At {
                method: &call.spec.method,
                url: &call.url,
                attempt: Some(attempt),
            });
            build(o);
        });
    }
}
