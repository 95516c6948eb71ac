//! The boot build (cargo feature `boot`): the first attempt of a call made
//! before the engine is in. Rust creates the attempt's `AbortController`,
//! calls the host's `fetch` with its signal, and aborts it when the
//! attempt's time (its timeout or the rest of the deadline) runs out or the
//! caller's signal aborts. Nothing else: what the outcome means (a sample
//! for the breaker, budget and stats; a retry) is the engine's when it
//! arrives (pkg-template/boot.js hands it over). It holds no state and
//! allocates nothing: what an attempt in flight needs is handed back to JS.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &js_sys::Function, ms: u32) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Sends `input` with `init` (an object of the caller's, whose `signal` is
/// set here) through `fetch`; the attempt is aborted with `timeout` after
/// `ms`, and when `caller` aborts. Gives `[response, controller, timer,
/// listener]`: the promise of the host's fetch (a fetch that throws is a
/// rejected one), the attempt's controller (its body is read under its
/// signal), and what [`end`] takes back.
#[wasm_bindgen]
pub fn send(
    fetch: &js_sys::Function,
    input: &JsValue,
    init: &js_sys::Object,
    ms: u32,
    timeout: &JsValue,
    caller: Option<AbortSignal>,
) -> Result<js_sys::Array, JsValue> {
    let controller = AbortController::new()?;
    js_sys::Reflect::set(init, &"signal".into(), &controller.signal())?;
    let abort: js_sys::Function = js_sys::Reflect::get(&controller, &"abort".into())?.into();
    let timer = set_timeout(&abort.bind1(&controller, timeout).unchecked_into(), ms);
    // Called with the abort event after the bound `undefined`: the default reason.
    let listener: js_sys::Function = abort
        .bind1(&controller, &JsValue::UNDEFINED)
        .unchecked_into();
    if let Some(s) = &caller {
        s.add_event_listener_with_callback("abort", &listener)?;
    }
    let response = match fetch.call2(&JsValue::UNDEFINED, input, init) {
        Ok(p) => js_sys::Promise::resolve(&p),
        Err(e) => js_sys::Promise::reject(&e),
    };
    Ok(js_sys::Array::of4(
        &response,
        &controller,
        &timer,
        &listener,
    ))
}

/// The attempt is over (its body read or its error seen): its timer and
/// the caller's listener go.
#[wasm_bindgen]
pub fn end(timer: &JsValue, listener: &js_sys::Function, caller: Option<AbortSignal>) {
    clear_timeout(timer);
    if let Some(s) = caller {
        let _ = s.remove_event_listener_with_callback("abort", listener);
    }
}
