//! `client.on()`: the listeners of a client and the events they receive.
//!
//! An event is built only when its type has a listener, and what it says
//! is grouped by meaning ([`Event`]); serialized it is flat ([`Flat`]), as
//! the JS `StormguardEvent`, where a field an event does not carry is
//! absent, not `undefined`.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::call::Call;
use super::convert::to_js;
use serde::Serialize;

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
    /// The JS shape ([`Flat`]).
    fn to_js(&self) -> JsValue {
        let call = self.call;
        let num = |n: Option<u32>| n.map(f64::from);
        to_js(&Flat {
            kind: self.kind,
            request_id: self.request_id,
            method: call.map(|c| c.method),
            url: call.map(|c| c.url),
            attempt: num(call.and_then(|c| c.attempt)),
            elapsed_ms: self.times.elapsed_ms,
            remaining_ms: self.times.remaining_ms,
            delay_ms: self.times.delay_ms,
            reason: self.outcome.reason,
            key: self.breaker.key,
            from: self.breaker.from,
            to: self.breaker.to,
            error_name: self.outcome.error_name,
            status: self.outcome.status.map(f64::from),
        })
    }
}

/// The JS `StormguardEvent`: one flat object in this order, a field the
/// event does not carry absent (not `undefined`). Every number an f64, as
/// JS has it, so one serializer serves them all.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Flat<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    remaining_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<BreakerState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<BreakerState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<f64>,
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
