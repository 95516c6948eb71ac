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
//! since the server did answer. A cached copy is checked with `validate`
//! too before it is served (one that fails is not), and what is served is
//! its output: the copy stored is the response as it came.
//!
//! A copy is one user's document when the call carried credentials
//! (`Authorization`, `Cookie`, `Proxy-Authorization`, `X-API-Key`, the
//! client's or its own: [`crate::policy::credentials`]): such a call uses
//! no cache unless the caller names `cacheKey`, or on a server that shares
//! one client (or in a browser used by several people) one user's document
//! would be served to the next. And the default key is the URL plus the
//! call's own headers, so calls that differ in a header
//! (`Accept-Language`, a tenant) never share a copy.
//! A client with `auth`, a header function or a `beforeRequest` hook may
//! add credentials to every attempt: its calls, too, use no cache without
//! a `cacheKey`.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::call::Call;
use super::convert::{get, Obj};
use super::driver;
use super::engine::Engine;
use super::events::At;
use super::options::{scalar, Reader};
use super::storage::Fault;
use super::validate::{self, Check, Validate};
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
    validate: Option<Validate>,
}

/// Read by the reader `request()`'s options were (`own`: the call's
/// headers it read), after them.
impl SchemaOptions {
    /// It has a `validate` to call.
    pub fn validates(&self) -> bool {
        self.validate.is_some()
    }
}

pub fn read(
    r: &Reader,
    call: &Call,
    own: &[(String, Option<String>)],
) -> Result<SchemaOptions, OptionsError> {
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
    let validate = validate::read(r)?;
    // Keyed by URL alone, a POST's (a GraphQL query's) copy would answer
    // another body's call: only GET and HEAD get a default key.
    let key = match cache_key {
        Some(k) => Some(k),
        None if call.target.credentials().carried()
            || call.layer().may_authorize()
            || !call.named_by_url() =>
        {
            None
        }
        None => Some(default_key(&call.url, own)),
    };
    // Its deadline passed before the engine was in: it was given its
    // fallback, the cache unread (the engine's to read).
    let key = key.filter(|_| !call.is_late());
    Ok(SchemaOptions {
        key,
        version,
        max_age_ms,
        fallback,
        validate,
    })
}

/// The URL, then a `\nname:value` line per header of the call's own
/// (`options.headers`, names lower-cased, in the order given); the URL
/// alone for a call without any, as before headers were part of it. An
/// `undefined` header (which removes the client's) is no line.
fn default_key(url: &str, own: &[(String, Option<String>)]) -> String {
    let mut key = url.to_owned();
    for (k, v) in own.iter().filter_map(|(k, v)| Some((k, v.as_deref()?))) {
        key.push('\n');
        let name = key.len();
        key.push_str(k);
        if let Some(n) = key.get_mut(name..) {
            n.make_ascii_lowercase();
        }
        key.push(':');
        key.push_str(v);
    }
    key
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
    let store = engine.store();
    let mut faults = Vec::new();
    // An abort while an async schema answers ends the call as any abort does.
    let check = o.validate.map(|v| Check::new(v, &call, signal.as_ref()));
    let checked = |value| validate::checked(&engine, check.as_ref(), value);
    let error = match driver::call(engine.clone(), call, signal).await {
        // The copy stored is the response, not the schema's output: a
        // cached copy is checked (and transformed) again before it is served.
        Ok(value) => match checked(value.clone()).await {
            Ok(output) => {
                if let Some(key) = &o.key {
                    store.save(key, &o.version, &value, &mut faults);
                }
                report(&engine, &request_id, faults);
                return Ok(result(output, "network", None, None));
            }
            Err(e) => {
                engine.failed();
                match e.name() {
                    "AbortError" => return Err(e.to_js()),
                    _ => e.to_js(),
                }
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
    // A cached copy that fails `validate` is not served.
    let cached = match cached {
        Some(c) => match checked(c.data).await {
            Ok(data) => Some((data, c.age_ms)),
            Err(e) if e.name() == "AbortError" => return Err(e.to_js()),
            Err(_) => None,
        },
        None => None,
    };
    let (data, source, age_ms) = match cached {
        Some((data, age_ms)) => (data, "cache", Some(age_ms)),
        None if !o.fallback.is_undefined() => (o.fallback, "fallback", None),
        None => (JsValue::UNDEFINED, "none", None),
    };
    if source != "none" {
        engine.fell_back();
        let name = error_name(&error).unwrap_or_default();
        engine.events().emit("fallback", &request_id, &|ev| {
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

fn error_name(descriptor: &JsValue) -> Option<String> {
    get(descriptor, "name").ok()?.as_string()
}

/// One 'storage' event per fault; never the key, the data or a header.
fn report(engine: &Engine, request_id: &str, faults: Vec<Fault>) {
    for f in faults {
        engine.events().emit("storage", request_id, &|ev| {
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
