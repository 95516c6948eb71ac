//! Where an attempt goes: the client's `fetch` option, called with one
//! `Request` per attempt (as ky calls its `fetch`), else the global `fetch`
//! as it is at that attempt (so a test's mock installed later is used).
//!
//! Any number of clients may be installed as the global fetch
//! (`globalThis.fetch = client.fetch`, or a wrapper, sync or async, that
//! passes its arguments on), in any order (a module re-run by hot reload,
//! two bundles): an attempt never becomes a call again. Every init and
//! `Request` an attempt sends through the global fetch is marked in one
//! `WeakSet` of the realm, shared by every client of every copy of the
//! package (`host.js`), and a `client.fetch()` called with a marked
//! argument passes it, with no protection or count of its own, to the
//! global fetch as it was when that client was created. Each client
//! created while another was installed passes to that one, which passes to
//! what was there before it: one `fetch('/x')` is one request on the wire.
//! (Marking only a family's own attempts, as before, let two installed
//! clients bounce each other's attempts until the deadline.) A wrapper
//! that calls an installed client with new arguments makes a new call.
//! An attempt sent to a `fetch` option is marked for its own family only:
//! one client given as another's `fetch` is a call like any other, with
//! its headers, hooks and protections. Tested in
//! `tests/e2e/fetch-native.test.mjs`.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::hooks::UserFns;
use super::host::{current_fetch, fetch_later, mark_sent, new_request, was_sent, Sent};
use super::options::Reader;
use crate::policy::options::OptionsError;

/// A client's way to the network.
pub struct Transport {
    /// The `fetch` option.
    custom: Option<js_sys::Function>,
    /// The global fetch when the client was created (or what reading it threw).
    original: Result<JsValue, JsValue>,
    /// The Requests this client's family sent to a `fetch` option.
    sent: js_sys::WeakSet,
    /// Names this transport among those an attempt passed through.
    id: js_sys::Object,
}

impl Transport {
    /// The `fetch` client option: a function, or absent.
    pub fn option(r: &Reader) -> Result<Option<js_sys::Function>, OptionsError> {
        match r.value("fetch")? {
            None => Ok(None),
            Some(f) => f
                .dyn_into()
                .map(Some)
                .map_err(|_| OptionsError::new("fetch", "must be a function")),
        }
    }

    /// To the `fetch` option `custom` (else the global fetch), for a root
    /// client (`family` None) or one derived from the client whose
    /// transport is `family`.
    pub fn new(custom: Option<js_sys::Function>, family: Option<&Transport>) -> Transport {
        Transport {
            custom,
            original: current_fetch(),
            sent: family.map_or_else(js_sys::WeakSet::new, |t| t.sent.clone()),
            id: js_sys::Object::new(),
        }
    }

    /// Its attempts go to the user's `fetch` option.
    pub fn calls_user(&self) -> bool {
        self.custom.is_some()
    }

    /// The global fetch `original` was when the client was created, read
    /// by the caller (`createClientSync` before the module was in) rather
    /// than now.
    pub fn created_over(&mut self, original: JsValue) {
        self.original = Ok(original);
    }

    /// Sends one attempt: `fetch(input, init)`, or the `fetch` option
    /// called with `new Request(input, init)` through `fns`, the calling
    /// client's (`hooks.rs`: the one seam of the user's functions).
    pub fn send(&self, fns: Option<&UserFns>, input: &JsValue, init: &JsValue) -> js_sys::Promise {
        let Some(f) = &self.custom else {
            mark_sent(input, init);
            return fetch_later(current_fetch(), input, init);
        };
        match new_request(input, init) {
            // The wrapper sets a UserFns on every client: without one (never
            // in the package) the attempt fails as a network error.
            Ok(request) => match fns {
                Some(fns) => {
                    self.sent.add(&request);
                    fns.send(f, &request)
                }
                None => js_sys::Promise::reject(&JsValue::UNDEFINED),
            },
            Err(e) => js_sys::Promise::reject(&e),
        }
    }

    /// For `client.fetch(input, init)`: when its arguments are an attempt's
    /// (of any client through the global fetch, or of this client's family
    /// through its `fetch` option), the promise of the global fetch as it
    /// was when this client was created, called with them.
    /// An attempt this client passed on before, come back: the global fetch
    /// it was created with leads back to it (a wrapper installed before it,
    /// calling it), and the attempt fails with a `TypeError` rather than
    /// loop for ever.
    pub fn returned(&self, input: &JsValue, init: &JsValue) -> Option<js_sys::Promise> {
        let ours = |v: &JsValue| v.is_object() && self.sent.has(v.unchecked_ref());
        match was_sent(input, init, &self.id) {
            Sent::No if !ours(init) && !ours(input) => None,
            Sent::CameBack => Some(js_sys::Promise::reject(&js_sys::TypeError::new(
                "stormguard: the global fetch leads back to this client",
            ))),
            _ => Some(fetch_later(self.original.clone(), input, init)),
        }
    }
}
