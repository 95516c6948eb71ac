//! Where an attempt goes: the client's `fetch` option, called with one
//! `Request` per attempt (as ky calls its `fetch`), else the global `fetch`
//! as it is at that attempt (so a test's mock installed later is used).
//!
//! A client installed as the global fetch (`globalThis.fetch =
//! client.fetch`, or a wrapper, sync or async, that passes its arguments
//! on) must not send through itself: every attempt's init and `Request` is
//! marked in a `WeakSet` of its root client's (shared by the clients
//! derived from it), and a `client.fetch()` called with an argument its
//! own family marked is an attempt coming back. It goes to the global
//! fetch as it was when that client was created, so one `fetch('/x')` is
//! one request on the wire. A family shares one set of concurrency slots,
//! so one of its attempts waiting for another slot of the same family
//! could wait forever. Another client's attempt (a second root client
//! installed as the global fetch, or one client as another's `fetch`
//! option) is a call like any other: it goes through this client with its
//! headers, hooks and protections. Tested in
//! `tests/e2e/fetch-native.test.mjs`.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::host::{current_fetch, fetch_later, new_request};
use super::options::Reader;
use crate::policy::options::OptionsError;

/// A client's way to the network.
pub struct Transport {
    /// The `fetch` option.
    custom: Option<js_sys::Function>,
    /// The global fetch when the client was created (or what reading it threw).
    original: Result<JsValue, JsValue>,
    /// The inits and Requests of the attempts of this client's family.
    sent: js_sys::WeakSet,
}

impl Transport {
    /// The `fetch` client option (a function, or absent), for a root client
    /// (`family` None) or one derived from the client whose transport is
    /// `family`.
    pub fn read(r: &Reader, family: Option<&Transport>) -> Result<Transport, OptionsError> {
        let custom = match r.value("fetch")? {
            None => None,
            Some(f) => Some(
                f.dyn_into()
                    .map_err(|_| OptionsError::new("fetch", "must be a function"))?,
            ),
        };
        Ok(Transport {
            custom,
            original: current_fetch(),
            sent: family.map_or_else(js_sys::WeakSet::new, |t| t.sent.clone()),
        })
    }

    fn mark(&self, v: &JsValue) {
        if v.is_object() {
            self.sent.add(v.unchecked_ref());
        }
    }

    fn marked(&self, v: &JsValue) -> bool {
        v.is_object() && self.sent.has(v.unchecked_ref())
    }

    /// Sends one attempt: `fetch(input, init)`, or the `fetch` option
    /// called with `new Request(input, init)`.
    pub fn send(&self, input: &JsValue, init: &JsValue) -> js_sys::Promise {
        self.mark(init);
        let Some(f) = &self.custom else {
            self.mark(input);
            return fetch_later(current_fetch(), input, init);
        };
        match new_request(input, init) {
            Ok(request) => {
                self.mark(&request);
                fetch_later(Ok(f.clone().into()), &request, &JsValue::UNDEFINED)
            }
            Err(e) => js_sys::Promise::reject(&e),
        }
    }

    /// For `client.fetch(input, init)`: when its arguments are an attempt's
    /// of this client's family come back, the promise of the global fetch
    /// as it was when this client was created, called with them.
    pub fn returned(&self, input: &JsValue, init: &JsValue) -> Option<js_sys::Promise> {
        (self.marked(init) || self.marked(input))
            .then(|| fetch_later(self.original.clone(), input, init))
    }
}
