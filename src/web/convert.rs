//! Small helpers for building and reading plain JS objects.
//!
//! What the wasm hands out to users (`stats()`, `breakers()`, events) is a
//! `#[derive(Serialize)]` struct made a plain object by [`to_js`]; the
//! other objects it makes (error descriptors, peer messages, fetch inits)
//! are built member by member with [`Obj`]. What comes in is read member by
//! member with [`get`]: `serde_wasm_bindgen::from_value` would link float
//! formatting (+22.8 KB gzip, from its type errors) and give worse errors.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

thread_local! {
    /// The JS string of every key read or written so far, by the address
    /// and length of its `&'static str` (never freed, so never another's).
    static KEYS: RefCell<Vec<(usize, usize, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `k` as a JS string, made once: an options object is read key by key on
/// every call, and decoding each name from wasm memory again cost more than
/// the read (Node: 16 µs a call for an options object of one member).
pub fn key(k: &'static str) -> JsValue {
    let id = (k.as_ptr() as usize, k.len());
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        if let Some((.., v)) = keys.iter().find(|(at, len, _)| (*at, *len) == id) {
            return v.clone();
        }
        let v = JsValue::from_str(k);
        keys.push((id.0, id.1, v.clone()));
        v
    })
}

pub fn get(obj: &JsValue, k: &'static str) -> Result<JsValue, JsValue> {
    js_sys::Reflect::get(obj, &key(k))
}

/// `value` through serde-wasm-bindgen: a struct is a plain object with its
/// fields in order, a `None` marked `skip_serializing_if` absent (without
/// it the key would be there, `undefined`), a unit variant its name.
/// Numbers go out as f64 or u32 (a u64 would link integer formatting for
/// its range error), so nothing here fails; were it to, the error's value
/// is what the caller gets.
pub fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    serde_wasm_bindgen::to_value(value).unwrap_or_else(JsValue::from)
}

/// A plain object under construction.
pub struct Obj(pub js_sys::Object);

impl Obj {
    pub fn new() -> Obj {
        Obj(js_sys::Object::new())
    }
    pub fn set(&self, k: &'static str, v: impl Into<JsValue>) -> &Self {
        let _ = js_sys::Reflect::set(&self.0, &key(k), &v.into());
        self
    }
    pub fn into_js(self) -> JsValue {
        self.0.into()
    }
}
