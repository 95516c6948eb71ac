//! Small helpers for building and reading plain JS objects.
//!
//! What the wasm hands out (stats, breaker snapshots, events, peer
//! messages, error descriptors) is built with [`Obj`], member by member
//! (serde-wasm-bindgen's serializer and its key cache measured 2,076 bytes
//! gzip more: bench/README.md); what comes in is read field by field with
//! [`get`], which is smaller than `serde_wasm_bindgen::from_value` and gives
//! typed errors.

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
