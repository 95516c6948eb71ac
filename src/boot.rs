//! The boot build (cargo feature `boot`): the first attempt of a call made
//! before the engine is in. Rust creates the attempt's `AbortController`,
//! calls the host's `fetch` with its signal, and aborts it when the
//! attempt's time (its timeout or the rest of the deadline) runs out or the
//! caller's signal aborts. Nothing else: what the outcome means (a sample
//! for the breaker, budget and stats; a retry) is the engine's when it
//! arrives (pkg-template/boot.js hands it over).

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

/// One attempt in flight.
#[wasm_bindgen]
pub struct Sent {
    controller: AbortController,
    abort: js_sys::Function,
    timer: JsValue,
    caller: Option<AbortSignal>,
    response: js_sys::Promise,
}

#[wasm_bindgen]
impl Sent {
    /// What the host's fetch gave (a promise of the Response).
    pub fn response(&self) -> js_sys::Promise {
        self.response.clone()
    }

    /// The attempt's signal: its body is read under it.
    pub fn signal(&self) -> AbortSignal {
        self.controller.signal()
    }

    /// The attempt is over (its body read or its error seen): its timer and
    /// the caller's listener go.
    pub fn end(self) {
        clear_timeout(&self.timer);
        if let Some(s) = &self.caller {
            let _ = s.remove_event_listener_with_callback("abort", &self.abort);
        }
    }
}

/// Sends `input` with `init` (an object of the caller's, whose `signal` is
/// set here) through `fetch` on the global object; the attempt is aborted
/// with `timeout` after `ms`, and with the caller's reason when `caller`
/// aborts. A fetch that throws is a rejected promise.
#[wasm_bindgen]
pub fn send(
    fetch: &js_sys::Function,
    input: &JsValue,
    init: &js_sys::Object,
    ms: u32,
    timeout: &JsValue,
    caller: Option<AbortSignal>,
) -> Result<Sent, JsValue> {
    let controller = AbortController::new()?;
    let signal = controller.signal();
    js_sys::Reflect::set(init, &"signal".into(), &signal)?;
    let abort: js_sys::Function = js_sys::Reflect::get(&controller, &"abort".into())?.into();
    let timer = set_timeout(&abort.bind1(&controller, timeout).unchecked_into(), ms);
    // Called with the abort event after the bound `undefined`: the default reason.
    let abort: js_sys::Function = abort
        .bind1(&controller, &JsValue::UNDEFINED)
        .unchecked_into();
    if let Some(s) = &caller {
        s.add_event_listener_with_callback("abort", &abort)?;
    }
    let response = match fetch.call2(&JsValue::UNDEFINED, input, init) {
        Ok(p) => js_sys::Promise::resolve(&p),
        Err(e) => js_sys::Promise::reject(&e),
    };
    Ok(Sent {
        controller,
        abort,
        timer,
        caller,
        response,
    })
}
