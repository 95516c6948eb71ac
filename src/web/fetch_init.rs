//! fetch()'s own request options (`FetchInit`: `cache`, `credentials`,
//! `integrity`, `keepalive`, `mode`, `priority`, `redirect`, `referrer`,
//! `referrerPolicy`) for `request()`, `schema()` and as client defaults,
//! and the view through which `fetch(input, init)` hands its init to the
//! `Request` constructor.
//!
//! The `Request` constructor is the authority on what is valid: a field is
//! type-checked here (a string, `keepalive` a boolean), then a Request is
//! built with it, and the constructor's refusal becomes an `OptionsError`
//! naming the field. Nothing is dropped: every field given is set on the
//! init every attempt sends.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use super::convert::{get, key, Obj};
use super::host::{instance_of, new_request, Class};
use super::options::{is_dictionary, Reader};
use crate::policy::options::OptionsError;
use crate::text::cat;

/// The fields, in the order the Request constructor reads them; `true`
/// for the one boolean.
const FIELDS: [(&str, bool); 9] = [
    ("cache", false),
    ("credentials", false),
    ("integrity", false),
    ("keepalive", true),
    ("mode", false),
    ("priority", false),
    ("redirect", false),
    ("referrer", false),
    ("referrerPolicy", false),
];

/// The FetchInit fields of a call (or a client's defaults), as given.
#[derive(Clone, Default)]
pub struct Fields(Vec<(&'static str, JsValue)>);

impl Fields {
    /// The fields `r` gives, each of its type.
    pub fn read(r: &Reader) -> Result<Fields, OptionsError> {
        let mut out = Vec::new();
        for (k, boolean) in FIELDS {
            let v = if boolean {
                r.bool(k)?.map(JsValue::from)
            } else {
                r.string(k)?.map(|s| JsValue::from_str(&s))
            };
            if let Some(v) = v {
                out.push((k, v));
            }
        }
        Ok(Fields(out))
    }

    /// These fields over `defaults`, in the constructor's order.
    pub fn over(self, defaults: &Fields) -> Fields {
        if defaults.0.is_empty() {
            return self;
        }
        let pick = |from: &Fields, k: &str| from.0.iter().find(|(f, _)| *f == k).cloned();
        Fields(
            FIELDS
                .iter()
                .filter_map(|(k, _)| pick(&self, k).or_else(|| pick(defaults, k)))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets every field on `init`.
    pub fn apply(&self, init: &JsValue) {
        for (k, v) in &self.0 {
            let _ = js_sys::Reflect::set(init, &key(k), v);
        }
    }

    /// The value given for `k`, if any.
    fn get(&self, k: &JsValue) -> Option<JsValue> {
        if self.0.is_empty() {
            return None;
        }
        let k = k.as_string()?;
        self.0.iter().find(|(f, _)| *f == k).map(|(_, v)| v.clone())
    }

    /// The fields as text, for a dedupe key (calls that differ in one are
    /// not the same request).
    pub fn describe(&self, key: &mut String) {
        for (k, v) in &self.0 {
            key.push('\n');
            key.push_str(k);
            key.push('=');
            match v.as_string() {
                Some(text) => key.push_str(&text),
                None => key.push_str(if v.is_truthy() { "true" } else { "false" }),
            }
        }
    }

    /// Asks the Request constructor about a `method` request to `href`
    /// with these fields: `Err` names the first field whose addition it
    /// refuses, with its reason. Only a refusal costs more than one Request.
    pub fn check(&self, href: &str, method: &str) -> Result<(), OptionsError> {
        if self.0.is_empty() {
            return Ok(());
        }
        let href = JsValue::from_str(href);
        let init = Obj::new();
        init.set("method", method);
        let all = Obj::new();
        all.set("method", method);
        self.apply(&all.0);
        if new_request(&href, &all.0).is_ok() {
            return Ok(());
        }
        for (k, v) in &self.0 {
            init.set(k, v.clone());
            if let Err(e) = new_request(&href, &init.0) {
                let why = get(&e, "message").ok().and_then(|m| m.as_string());
                return Err(OptionsError::new(
                    k,
                    &cat(&[
                        "was refused by the Request constructor: ",
                        &why.unwrap_or_default(),
                    ]),
                ));
            }
        }
        Ok(())
    }
}

/// The trap that reads `init` for the Request constructor.
type InitTrap = Closure<dyn Fn(JsValue, JsValue) -> Result<JsValue, JsValue>>;

/// What `fetch(input, init)` gives the Request constructor for `init`: a
/// Proxy whose every read is `Reflect.get(init, key)` (inherited members and
/// getters, with `init` as their receiver, as the host's fetch reads them),
/// a client default standing in for a FetchInit field `init` leaves
/// undefined. Never a copy: Object.assign or a spread would turn an own
/// `__proto__` key (what JSON.parse makes of one) into the copy's prototype
/// and smuggle its method, headers and body in, and would drop inherited
/// members. The Proxy's target is an empty object, so a frozen `init`
/// breaks no Proxy invariant.
///
/// Every member read is kept, as read (`given`, `replay`). `signal` is not
/// handed on: every attempt has a signal of its own, linked to the
/// caller's (and a Request that followed the caller's signal would add a
/// listener to it per call in Node). A value that is no usable signal is
/// handed on, for the constructor to refuse with its own TypeError.
pub struct InitView {
    pub proxy: JsValue,
    /// Every member the constructor read, as it read it (`signal` too).
    seen: Rc<RefCell<Vec<(JsValue, JsValue)>>>,
    /// Must outlive the Request constructor's reads.
    _trap: InitTrap,
}

impl InitView {
    pub fn new(init: &JsValue, defaults: Fields) -> InitView {
        let signal_key = key("signal");
        let source = if is_dictionary(init) {
            init.clone()
        } else {
            js_sys::Object::new().into()
        };
        let seen = Rc::new(RefCell::new(Vec::new()));
        let kept = seen.clone();
        let trap = InitTrap::new(move |_target: JsValue, key: JsValue| {
            let v = js_sys::Reflect::get(&source, &key)?;
            let v = match defaults.get(&key) {
                Some(d) if v.is_undefined() => d,
                _ => v,
            };
            let hidden = key == signal_key && (v.is_undefined() || v.is_null() || is_signal(&v));
            kept.borrow_mut().push((key, v.clone()));
            Ok(if hidden { JsValue::UNDEFINED } else { v })
        });
        let handler = Obj::new();
        handler.set("get", trap.as_ref().clone());
        let proxy = js_sys::Proxy::new(&js_sys::Object::new(), &handler.0);
        InitView {
            proxy: proxy.into(),
            seen,
            _trap: trap,
        }
    }

    /// What the constructor read of `key`, when it was given (not undefined).
    pub fn given(&self, name: &'static str) -> Option<JsValue> {
        let key = key(name);
        let seen = self.seen.borrow();
        let (_, v) = seen.iter().find(|(k, _)| *k == key)?;
        (!v.is_undefined()).then(|| v.clone())
    }

    /// An init for `fetch(url, init)` as the constructor read it, but for
    /// `signal` (each attempt sets its own) and `headers` (the built
    /// Request's, which hold the client's and the idempotency key).
    pub fn replay(&self, headers: &web_sys::Headers) -> web_sys::RequestInit {
        let init = web_sys::RequestInit::new();
        for (k, v) in self.seen.borrow().iter() {
            if !v.is_undefined() {
                let _ = js_sys::Reflect::set(&init, k, v);
            }
        }
        init.set_headers(headers);
        init
    }

    /// What `init.signal` was, once the constructor has read it: `None`
    /// when absent (undefined), `Some(None)` for null (the input Request's
    /// signal removed), `Some(Some(signal))` for a signal.
    pub fn signal(&self) -> Option<Option<AbortSignal>> {
        self.given("signal")
            .map(|v| v.is_object().then(|| v.unchecked_into()))
    }
}

/// A signal that can be listened to. A Proxy of one passes `instanceof` but
/// throws on every read: the constructor refuses it.
fn is_signal(v: &JsValue) -> bool {
    instance_of(v, Class::AbortSignal) && get(v, "aborted").is_ok_and(|a| a.as_bool().is_some())
}
