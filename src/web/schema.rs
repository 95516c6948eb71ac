//! `client.schema()`: `request()` plus a last-good copy.
//!
//! Some documents a UI cannot render without (a layout, feature flags, a
//! form definition). For those an old copy beats an error page, so
//! `schema()` resolves for every fault but the caller's abort (network,
//! HTTP, breaker, budget, queue, storage) and says where the data came
//! from: the network, the last good copy ([`super::storage`]), the caller's
//! `fallback`, or nothing, with the error that kept the network copy away.
//!
//! An open breaker needs no special case: the engine refuses the call at
//! once with `CircuitOpenError`, before any request is sent, and the cache
//! answers. A body that `validate` rejects is not stored and becomes a
//! `ParseError` (counted in `stats().failures`, like a body that does not
//! parse); the engine has already recorded the attempt as a breaker success,
//! since the server did answer. A call that sends `Authorization` (or whose
//! client has `auth`, a header function or a `beforeRequest` hook, which
//! may add one) uses no cache unless the caller names `cacheKey`: under the URL alone, one user's
//! document would be served to the next user of the browser.

use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use super::call::Call;
use super::convert::{get, Obj};
use super::engine::Engine;
use super::errors::{CallError, ErrorKind};
use super::events::At;
use super::host::now_ms;
use super::options::{scalar, Reader};
use super::storage::{Fault, Store};
use crate::policy::call_options;
use crate::policy::options::OptionsError;

/// `schema()`'s own options, read after the `request()` ones.
pub struct SchemaOptions {
    /// The storage key; `None`: no cache for this call.
    key: Option<String>,
    /// `undefined` when not given: then only copies saved without one match.
    version: JsValue,
    max_age_ms: Option<f64>,
    /// `undefined` when not given.
    fallback: JsValue,
    validate: Option<Function>,
}

pub fn read(options: &JsValue, call: &Call) -> Result<SchemaOptions, OptionsError> {
    let r = Reader::new(options, "options")?;
    // request() has read and checked it.
    if let Some(rt) = call.mode.response_type() {
        rt.for_schema()?;
    }
    let cache_key = r.string("cacheKey")?;
    let version = match r.value("version")? {
        None => JsValue::UNDEFINED,
        Some(v) => {
            call_options::version(scalar(&v))?;
            v
        }
    };
    let max_age_ms = call_options::max_age_ms(r.num("maxAgeMs")?)?;
    let fallback = r.value("fallback")?.unwrap_or(JsValue::UNDEFINED);
    let validate = match r.value("validate")? {
        Some(v) if !v.is_null() => Some(
            v.dyn_into::<Function>()
                .map_err(|_| OptionsError::new("validate", "must be a function"))?,
        ),
        _ => None,
    };
    // Client-level and call-level headers are both on the built request;
    // a token, header function or beforeRequest hook may add one to each
    // attempt.
    let authorized = call.layer().may_authorize()
        || call
            .target
            .headers()
            .is_some_and(|h| h.has("authorization").unwrap_or(true));
    // Keyed by URL alone, a POST's (a GraphQL query's) copy would answer
    // another body's call: only GET and HEAD get a default key.
    let key = match cache_key {
        Some(k) => Some(k),
        None if authorized || !call.named_by_url() => None,
        None => Some(call.url.clone()),
    };
    Ok(SchemaOptions {
        key,
        version,
        max_age_ms,
        fallback,
        validate,
    })
}

/// Runs the call and settles on the network copy, the cache, the fallback or
/// nothing. Rejects only with an AbortError (or, before that, OptionsError).
pub async fn run(
    engine: Rc<Engine>,
    call: Call,
    signal: Option<AbortSignal>,
    o: SchemaOptions,
) -> Result<JsValue, JsValue> {
    let (request_id, method, url) = (
        call.request_id.clone(),
        call.spec.method.clone(),
        call.url.clone(),
    );
    let started = now_ms();
    let store = Store::new(engine.cfg.storage.as_ref(), &engine.memory);
    let mut faults = Vec::new();
    let error = match engine.clone().call(call, signal).await {
        Ok(value) => match validate(o.validate.as_ref(), &value) {
            Ok(()) => {
                if let Some(key) = &o.key {
                    store.save(key, &o.version, &value, &mut faults);
                }
                report(&engine, &request_id, faults);
                return Ok(result(value, "network", None, None));
            }
            Err(cause) => {
                engine.st.borrow_mut().guard.failed();
                let e = CallError::new(ErrorKind::Parse { cause });
                let d = e.stamped(&request_id, 0, now_ms() - started).to_js();
                let _ = js_sys::Reflect::set(
                    &d,
                    &JsValue::from_str("message"),
                    &JsValue::from_str("response rejected by validate()"),
                );
                d
            }
        },
        Err(e) if error_name(&e).as_deref() == Some("AbortError") => return Err(e),
        Err(e) => e,
    };
    let cached = o
        .key
        .as_ref()
        .and_then(|k| store.load(k, &o.version, o.max_age_ms, &mut faults));
    report(&engine, &request_id, faults);
    let (data, source, age_ms) = match cached {
        Some(c) => (c.data, "cache", Some(c.age_ms)),
        None if !o.fallback.is_undefined() => (o.fallback, "fallback", None),
        None => (JsValue::UNDEFINED, "none", None),
    };
    if source != "none" {
        engine.st.borrow_mut().guard.stats.fallbacks += 1;
        let name = error_name(&error).unwrap_or_default();
        engine.events.emit("fallback", &request_id, &|ev| {
            ev.call = Some(At {
                method: &method,
                url: &url,
                attempt: None,
            });
            ev.outcome.error_name = Some(&name);
        });
    }
    Ok(result(data, source, age_ms, Some(error)))
}

/// `Err(cause)` when `validate` returns something falsy or throws. A
/// promise (an async validate) is a failure: its answer would come too late
/// to decide, and a promise is always truthy.
fn validate(f: Option<&Function>, value: &JsValue) -> Result<(), JsValue> {
    match f.map(|f| f.call1(&JsValue::UNDEFINED, value)) {
        None => Ok(()),
        Some(Ok(v)) if get(&v, "then").is_ok_and(|t| t.is_function()) => {
            Err(js_sys::TypeError::new("validate() must return a boolean, not a promise").into())
        }
        Some(Ok(v)) if v.is_truthy() => Ok(()),
        Some(Ok(_)) => Err(JsValue::UNDEFINED),
        Some(Err(thrown)) => Err(thrown),
    }
}

fn error_name(descriptor: &JsValue) -> Option<String> {
    get(descriptor, "name").ok()?.as_string()
}

/// One 'storage' event per fault; never the key, the data or a header.
fn report(engine: &Engine, request_id: &str, faults: Vec<Fault>) {
    for f in faults {
        engine.events.emit("storage", request_id, &|ev| {
            ev.outcome.reason = Some(f.reason);
            ev.outcome.error_name = f.error_name.as_deref();
        });
    }
}

fn result(data: JsValue, source: &str, age_ms: Option<f64>, error: Option<JsValue>) -> JsValue {
    let r = Obj::new();
    r.set("data", data)
        .set("source", source)
        .set("stale", source != "network");
    if let Some(a) = age_ms {
        r.set("ageMs", a);
    }
    if let Some(e) = error {
        r.set("error", e);
    }
    r.into_js()
}
