//! `client.on()`: the listeners of a client and the events they receive.
//!
//! An event is built only when its type has a listener, and what it says
//! is grouped by meaning ([`Event`]); its `Serialize` writes it flat, as
//! the JS `StormguardEvent`, where a field an event does not carry is
//! absent, not `undefined`.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::call::Call;
use super::convert::to_js;
use serde::ser::{Serialize, SerializeStruct, Serializer};

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

/// The JS shape: one flat object, a field the event does not carry absent.
impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn opt<O: SerializeStruct, T: Serialize>(
            o: &mut O,
            key: &'static str,
            value: Option<T>,
        ) -> Result<(), O::Error> {
            match value {
                Some(v) => o.serialize_field(key, &v),
                None => Ok(()),
            }
        }
        // Every number goes out as an f64 (as JS has it): one instance of
        // `opt` for all of them.
        let mut o = s.serialize_struct("StormguardEvent", 14)?;
        o.serialize_field("type", self.kind)?;
        o.serialize_field("requestId", self.request_id)?;
        opt(&mut o, "method", self.call.map(|c| c.method))?;
        opt(&mut o, "url", self.call.map(|c| c.url))?;
        opt(
            &mut o,
            "attempt",
            self.call.and_then(|c| c.attempt).map(f64::from),
        )?;
        opt(&mut o, "elapsedMs", self.times.elapsed_ms)?;
        opt(&mut o, "remainingMs", self.times.remaining_ms)?;
        opt(&mut o, "delayMs", self.times.delay_ms)?;
        opt(&mut o, "reason", self.outcome.reason)?;
        opt(&mut o, "key", self.breaker.key)?;
        opt(&mut o, "from", self.breaker.from)?;
        opt(&mut o, "to", self.breaker.to)?;
        opt(&mut o, "errorName", self.outcome.error_name)?;
        opt(&mut o, "status", self.outcome.status.map(f64::from))?;
        o.end()
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
        let event = to_js(&event);
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
