//! The browser suites' helpers (`tests/browser.rs`, `tests/schema.rs`):
//! the fault server's address and request log, option objects from JSON,
//! property access, a sleep.

use js_sys::{Array, Function, Reflect};
use stormguard::Client;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    pub fn plain_fetch(url: &str) -> js_sys::Promise;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: i32) -> JsValue;
    #[wasm_bindgen(js_namespace = JSON, js_name = parse)]
    fn json_parse(s: &str) -> JsValue;
}

/// The fault server, started by `npm test` (scripts/test.sh) or by hand
/// (README, "Running one test"). Its URL is read when the tests compile, so
/// a new URL rebuilds them.
pub fn fault() -> &'static str {
    match option_env!("STORMGUARD_FAULT_URL") {
        Some(u) => u,
        None => panic!(
            "STORMGUARD_FAULT_URL was not set when the tests compiled: start the fault server \
             and export its URL (README, \"Running one test\"), or run npm test"
        ),
    }
}

/// A test id unique per run, so reruns never read an old log or entry.
pub fn test_id(name: &str) -> String {
    format!("{name}-{}", js_sys::Date::now())
}

/// `path` on the fault server, logged under `id`.
pub fn url(path: &str, id: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{}{path}{sep}id={id}", fault())
}

/// A JS object from JSON text (options in tests read like the JS they model).
pub fn obj(json: &str) -> JsValue {
    json_parse(json)
}

pub fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(k)).unwrap()
}

pub fn num(v: &JsValue, k: &str) -> f64 {
    get(v, k).as_f64().unwrap_or(f64::NAN)
}

pub fn stat(client: &Client, k: &str) -> f64 {
    num(&client.stats(), k)
}

pub async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    });
    JsFuture::from(p).await.unwrap();
}

/// The fault server's log of every request it received for `id`, preflights left out.
pub async fn server_log(id: &str) -> Array {
    let resp: web_sys::Response = JsFuture::from(plain_fetch(&format!("{}/_log?id={id}", fault())))
        .await
        .unwrap()
        .unchecked_into();
    let log = JsFuture::from(resp.json().unwrap()).await.unwrap();
    Array::from(&log)
        .iter()
        .filter(|e| !get(e, "preflight").is_truthy())
        .collect()
}
