//! Small helpers for building and reading plain JS objects.
//!
//! What the wasm hands out (stats, breaker snapshots, events, peer
//! messages) is a `#[derive(Serialize)]` struct turned into a plain object
//! by [`to_js`]; what comes in is read field by field with [`get`], which
//! is smaller than `serde_wasm_bindgen::from_value` and gives typed errors.

use wasm_bindgen::prelude::*;

pub fn key(k: &str) -> JsValue {
    JsValue::from_str(k)
}

pub fn get(obj: &JsValue, k: &str) -> Result<JsValue, JsValue> {
    js_sys::Reflect::get(obj, &key(k))
}

/// `value` as a plain JS object: `Option::None` fields marked
/// `skip_serializing_if` are absent, u64/u32/f64 are numbers (never BigInt:
/// a u64 above 2^53 is an error, which no counter reaches).
pub fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::new())
        .unwrap_or_else(JsValue::from)
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
