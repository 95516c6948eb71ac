//! `hooks`: the functions a client runs at fixed points of a call, with
//! ky's names and order (`beforeRequest`, `afterResponse`, `beforeRetry`,
//! `beforeError`; each a function or an array run in order, a derived
//! client's after its parent's).
//!
//! Why here and not in the policy core: a hook is I/O around an attempt.
//! What a hook may change is the core's to decide: a `beforeRetry` that
//! says `false` goes to `Guard::veto_retry` (it can take a retry away, never
//! add one), and a hook that fails ends its attempt as `Ended::Hook` (no
//! breaker sample, no retry). Hooks run inside the attempt (its time, its
//! concurrency slot), so an abort, a timeout or the deadline ends the wait
//! for them like any other; one that throws ends the call with an
//! `OptionsError('hooks')` whose `cause` is what it threw.

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{get, Obj};
use super::errors::{CallError, ErrorKind};
use super::host::{instance_of, to_promise};
use super::options::Reader;
use super::runtime::{settle, sleep, Either, Race};
use crate::policy::options::OptionsError;
use crate::text::cat;

const NAMES: [&str; 4] = [
    "beforeRequest",
    "afterResponse",
    "beforeRetry",
    "beforeError",
];

/// A client's hooks, each list in the order it runs.
#[derive(Default, Clone)]
pub struct Hooks {
    pub before_request: Vec<Function>,
    pub after_response: Vec<Function>,
    pub before_retry: Vec<Function>,
    pub before_error: Vec<Function>,
}

impl Hooks {
    /// `hooks` of an options object.
    pub fn read(r: &Reader) -> Result<Hooks, OptionsError> {
        let Some(v) = r.value("hooks")? else {
            return Ok(Hooks::default());
        };
        if !v.is_object() || v.is_function() {
            return Err(OptionsError::new("hooks", "must be an object"));
        }
        let mut lists: [Vec<Function>; 4] = Default::default();
        for (name, list) in NAMES.iter().zip(lists.iter_mut()) {
            *list = functions(&v, name)?;
        }
        let [before_request, after_response, before_retry, before_error] = lists;
        Ok(Hooks {
            before_request,
            after_response,
            before_retry,
            before_error,
        })
    }

    /// These hooks, then `more`'s (a derived client's run after its
    /// parent's).
    pub fn then(&self, more: Hooks) -> Hooks {
        let join = |a: &[Function], b: Vec<Function>| a.iter().cloned().chain(b).collect();
        Hooks {
            before_request: join(&self.before_request, more.before_request),
            after_response: join(&self.after_response, more.after_response),
            before_retry: join(&self.before_retry, more.before_retry),
            before_error: join(&self.before_error, more.before_error),
        }
    }
}

/// `hooks[name]`: absent, a function, or an array of functions.
fn functions(hooks: &JsValue, name: &str) -> Result<Vec<Function>, OptionsError> {
    let option = cat(&["hooks.", name]);
    let bad = || OptionsError::new(&option, "must be a function or an array of functions");
    let v = get(hooks, name).map_err(|_| OptionsError::new(&option, "could not be read"))?;
    if v.is_undefined() {
        return Ok(Vec::new());
    }
    if let Some(f) = v.dyn_ref::<Function>() {
        return Ok(vec![f.clone()]);
    }
    if !Array::is_array(&v) {
        return Err(bad());
    }
    let list = super::host::array_from(&v).map_err(|_| bad())?;
    list.iter()
        .map(|f| f.dyn_into::<Function>().map_err(|_| bad()))
        .collect()
}

/// The error a failed hook (or header function, or token) ends its call
/// with: an `OptionsError` naming `option`, `cause` what it threw.
pub fn failed(option: &'static str, reason: &'static str, cause: JsValue) -> CallError {
    CallError::new(ErrorKind::Hook {
        option,
        reason,
        cause,
    })
}

/// `f(...args)`, and what it returns awaited (a promise or a plain value):
/// `Err` with what it threw or rejected with.
pub async fn call(f: &Function, args: &Array) -> Result<JsValue, JsValue> {
    let v = f.apply(&JsValue::UNDEFINED, args)?;
    // A plain value needs no trip through the microtask queue.
    if !v.is_object() && !v.is_function() {
        return Ok(v);
    }
    settle(to_promise(&v)).await
}

/// `AttemptInfo`: `{ requestId, attempt, method, url }`.
pub fn attempt_info(request_id: &str, attempt: u32, method: &str, url: &str) -> JsValue {
    let o = Obj::new();
    o.set("requestId", request_id)
        .set("attempt", attempt)
        .set("method", method)
        .set("url", url);
    o.into_js()
}

/// The `beforeRequest` hooks on `request`, in order: each may return a
/// Request to send instead (the next one sees it), which must keep the
/// origin and the method (the breaker key, the method's retry safety and
/// the credentials were decided for them), or change `request.headers` in
/// place.
pub async fn before_request(
    hooks: &[Function],
    mut request: web_sys::Request,
    info: &JsValue,
) -> Result<web_sys::Request, CallError> {
    for f in hooks {
        let args = Array::of2(&request, info);
        let out = call(f, &args)
            .await
            .map_err(|e| failed("hooks", "beforeRequest threw", e))?;
        if out.is_undefined() || out.is_null() {
            continue;
        }
        if !instance_of::<web_sys::Request>(&out) {
            return Err(failed(
                "hooks",
                "beforeRequest must return a Request or nothing",
                JsValue::UNDEFINED,
            ));
        }
        let next: web_sys::Request = out.unchecked_into();
        if !same_target(&request, &next) {
            return Err(failed(
                "hooks",
                "beforeRequest must keep the request's origin and method",
                JsValue::UNDEFINED,
            ));
        }
        request = next;
    }
    Ok(request)
}

/// Same origin and method.
fn same_target(a: &web_sys::Request, b: &web_sys::Request) -> bool {
    let origin = |r: &web_sys::Request| web_sys::Url::new(&r.url()).map(|u| u.origin()).ok();
    a.method() == b.method() && origin(a).is_some() && origin(a) == origin(b)
}

/// The `afterResponse` hooks: each may return a Response to use instead.
pub async fn after_response(
    hooks: &[Function],
    request: &JsValue,
    mut response: JsValue,
    info: &JsValue,
) -> Result<JsValue, CallError> {
    for f in hooks {
        let args = Array::of3(request, &response, info);
        let out = call(f, &args)
            .await
            .map_err(|e| failed("hooks", "afterResponse threw", e))?;
        if out.is_undefined() || out.is_null() {
            continue;
        }
        if !instance_of::<web_sys::Response>(&out) {
            return Err(failed(
                "hooks",
                "afterResponse must return a Response or nothing",
                JsValue::UNDEFINED,
            ));
        }
        response = out;
    }
    Ok(response)
}

/// The `beforeRetry` hooks with `info & { error, delayMs }`: `Ok(false)`
/// as soon as one returns `false` (the others do not run).
pub async fn before_retry(
    hooks: &[Function],
    info: &JsValue,
    error: &JsValue,
    delay_ms: f64,
) -> Result<bool, CallError> {
    let _ = js_sys::Reflect::set(info, &"error".into(), error);
    let _ = js_sys::Reflect::set(info, &"delayMs".into(), &delay_ms.into());
    for f in hooks {
        let out = call(f, &Array::of1(info))
            .await
            .map_err(|e| failed("hooks", "beforeRetry threw", e))?;
        if out.as_bool() == Some(false) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The `beforeError` hooks on the error a call rejects with (a class
/// instance), for at most `ms` (what was left of the call's deadline; past
/// it, the call rejects with its own error): each may return another
/// StormguardError. One that throws or returns something else makes it an
/// OptionsError('hooks'), which `classed` makes an instance.
pub async fn before_error(
    hooks: &[Function],
    error: JsValue,
    ms: f64,
    classed: impl Fn(JsValue) -> JsValue,
) -> JsValue {
    let run = std::pin::pin!(run_before_error(hooks, error.clone()));
    match Race(run, sleep(ms)).await {
        Either::Left(Ok(replaced)) => replaced,
        Either::Left(Err(descriptor)) => classed(descriptor),
        Either::Right(_) => error,
    }
}

async fn run_before_error(hooks: &[Function], mut error: JsValue) -> Result<JsValue, JsValue> {
    for f in hooks {
        let out = call(f, &Array::of1(&error))
            .await
            .map_err(|e| failed("hooks", "beforeError threw", e).to_js())?;
        if !is_stormguard_error(&out) {
            let e = failed(
                "hooks",
                "beforeError must return a StormguardError",
                JsValue::UNDEFINED,
            );
            return Err(e.to_js());
        }
        error = out;
    }
    Ok(error)
}

/// `isStormguardError(v)`: the brand every stormguard error carries, from
/// any realm.
fn is_stormguard_error(v: &JsValue) -> bool {
    let brand = js_sys::Symbol::for_("stormguard.error");
    v.is_object() && js_sys::Reflect::get(v, &brand).is_ok_and(|b| b.as_bool() == Some(true))
}
