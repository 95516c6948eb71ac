//! Small helpers for building and reading plain JS objects.

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
