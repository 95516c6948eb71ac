//! Small helpers for building and reading plain JS objects.
//!
//! What the wasm hands out (stats, breaker snapshots, events, peer
//! messages, error descriptors) is built with [`Obj`], member by member
//! (serde-wasm-bindgen's serializer and its key cache measured 2,076 bytes
//! gzip more: bench/README.md); what comes in is read field by field with
//! [`get`], which is smaller than `serde_wasm_bindgen::from_value` and gives
//! typed errors.

use wasm_bindgen::prelude::*;

pub fn key(k: &str) -> JsValue {
    JsValue::from_str(k)
}

pub fn get(obj: &JsValue, k: &str) -> Result<JsValue, JsValue> {
    js_sys::Reflect::get(obj, &key(k))
}

/// A plain object under construction.
pub struct Obj(pub js_sys::Object);

impl Obj {
    pub fn new() -> Obj {
        Obj(js_sys::Object::new())
    }
    pub fn set(&self, k: &str, v: impl Into<JsValue>) -> &Self {
        let _ = js_sys::Reflect::set(&self.0, &key(k), &v.into());
        self
    }
    pub fn into_js(self) -> JsValue {
        self.0.into()
    }
}
