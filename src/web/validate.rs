//! `validate` on `request()` and `schema()`: a predicate `(value) =>
//! boolean`, or a Standard Schema (v1: the interface zod, valibot and
//! arktype implement, an object whose `~standard.validate(value)` returns
//! `{ value }` or `{ issues }`, or a promise of one). No validation library
//! is a dependency: this only calls what it is given, through the client's
//! `UserFns` (`hooks.rs`), the one seam of the user's functions.
//!
//! A value is checked once the call's network part has ended with it: the
//! server answered, so a value that fails is a `ParseError` (with the
//! schema's `issues`, at most 20) that is neither retried nor a breaker
//! failure. The call resolves with the schema's output (a predicate's
//! value as it is). An async schema is awaited within the call's deadline,
//! its caller's signal and the client's `close()`.

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use std::rc::Rc;

use super::call::Call;
use super::cancel::Cancel;
use super::convert::get;
use super::engine::Engine;
use super::errors::{CallError, ErrorKind};
use super::hooks::UserFns;
use super::host::{now_ms, to_promise};
use super::layer::Layer;
use super::options::Reader;
use super::runtime::{settle, Wake};
use crate::policy::guard::Phase;
use crate::policy::href::described;
use crate::policy::options::OptionsError;

/// The most issues a `ParseError` keeps.
const MAX_ISSUES: u32 = 20;

/// What `validate` was given.
pub enum Validate {
    Predicate(Function),
    /// The `~standard` object and its `validate`.
    Schema(JsValue, Function),
}

/// `validate`: absent (or null), a Standard Schema, or a function. A
/// schema is told first: an arktype type is a function too.
pub fn read(r: &Reader) -> Result<Option<Validate>, OptionsError> {
    let v = match r.value("validate")? {
        Some(v) if !v.is_null() => v,
        _ => return Ok(None),
    };
    // A predicate has no `~standard`: not asked of undefined, where
    // Reflect.get would throw (an exception per call that reads options).
    let standard = get(&v, "~standard").unwrap_or_default();
    let f = if standard.is_object() {
        get(&standard, "validate").unwrap_or_default()
    } else {
        JsValue::UNDEFINED
    };
    if f.is_function() {
        Ok(Some(Validate::Schema(standard, f.unchecked_into())))
    } else if v.is_function() {
        Ok(Some(Validate::Predicate(v.unchecked_into())))
    } else {
        Err(OptionsError::new(
            "validate",
            "must be a function or a Standard Schema",
        ))
    }
}

/// Why a value failed: what was thrown (undefined for a plain `false`)
/// and the schema's issues (undefined for a predicate).
type Failed = (JsValue, JsValue);

fn thrown(e: JsValue) -> Failed {
    (e, JsValue::UNDEFINED)
}

fn is_thenable(v: &JsValue) -> bool {
    v.is_object() && get(v, "then").is_ok_and(|t| t.is_function())
}

impl Validate {
    /// A predicate's verdict on `value` (`Ok(None)`: it passes as it is),
    /// or what a schema answered (a promise of its result, to settle),
    /// each called through `fns`, the client's (`hooks.rs`).
    fn call(
        &self,
        fns: Option<&UserFns>,
        value: &JsValue,
    ) -> Result<Option<js_sys::Promise>, Failed> {
        // The wrapper sets a UserFns on every client: without one (never in
        // the package) the value fails as a predicate's `false` would.
        let fns = fns.ok_or_else(|| thrown(JsValue::UNDEFINED))?;
        let (standard, f) = match self {
            Validate::Predicate(f) => {
                return match fns.validate(f, &JsValue::UNDEFINED, value) {
                    // Its answer would come too late to decide, and a
                    // promise is always truthy: an async check is a schema.
                    Ok(v) if is_thenable(&v) => Err(thrown(
                        js_sys::TypeError::new(
                            "validate() must return a boolean, not a promise (an async check is a Standard Schema)",
                        )
                        .into(),
                    )),
                    Ok(v) if v.is_truthy() => Ok(None),
                    Ok(_) => Err(thrown(JsValue::UNDEFINED)),
                    Err(e) => Err(thrown(e)),
                };
            }
            Validate::Schema(standard, f) => (standard, f),
        };
        fns.validate(f, standard, value)
            .map(|result| Some(to_promise(&result)))
            .map_err(thrown)
    }
}

/// A schema's settled result: its output, or its issues (at most 20).
fn outcome(result: &JsValue) -> Result<JsValue, Failed> {
    let issues = get(result, "issues").map_err(thrown)?;
    if !issues.is_truthy() {
        return get(result, "value").map_err(thrown);
    }
    let issues = match issues.dyn_into::<Array>() {
        Ok(list) => list.slice(0, MAX_ISSUES).into(),
        Err(other) => other,
    };
    Err((JsValue::UNDEFINED, issues))
}

/// One call's check: its validator, and what its errors are stamped with.
pub struct Check {
    validate: Validate,
    request_id: String,
    /// Which call it is, for its error's message (`policy::href::described`).
    about: String,
    started_ms: f64,
    deadline_ms: f64,
    signal: Option<AbortSignal>,
    /// The call's cancel state: how many attempts it made.
    cancel: Cancel,
    /// What an async schema is awaited under: the caller's signal and the
    /// `close()` of `layer`, the client that made the call.
    own: Cancel,
    layer: Rc<Layer>,
}

impl Check {
    /// Made before `call` starts.
    pub fn new(validate: Validate, call: &Call, signal: Option<&AbortSignal>) -> Check {
        Check {
            validate,
            request_id: call.request_id.clone(),
            about: described(&call.spec.method, &call.url),
            started_ms: now_ms(),
            deadline_ms: call.spec.cfg.deadline_ms,
            signal: signal.cloned(),
            cancel: call.cancel.clone(),
            own: Cancel::default(),
            layer: call.layer().clone(),
        }
    }

    /// `value` checked: the value to resolve with, or the error (a
    /// ParseError; an AbortError or TimeoutError when the caller aborts or
    /// the deadline passes or `engine` (its client) is closed while an
    /// async schema answers).
    pub async fn check(&self, engine: &Engine, value: JsValue) -> Result<JsValue, CallError> {
        let invalid =
            |(cause, issues): Failed| CallError::new(ErrorKind::Invalid { cause, issues });
        let e = match self.validate.call(self.layer.any_fns(), &value) {
            Ok(None) => return Ok(value),
            Err(failed) => invalid(failed),
            Ok(Some(answer)) => {
                let own = &self.own;
                let _link = own.follow(self.signal.as_ref());
                let left = self.deadline_ms - (now_ms() - self.started_ms);
                let answered = own.within(left.max(0.0), settle(answer));
                match engine.tracked(&self.layer, own, answered).await {
                    Ok(settled) => match settled.map_err(thrown).and_then(|r| outcome(&r)) {
                        Ok(output) => return Ok(output),
                        Err(failed) => invalid(failed),
                    },
                    Err(Wake::Cancelled) => own.abort_error(),
                    Err(_) => CallError::new(ErrorKind::Timeout {
                        phase: Phase::Deadline,
                    }),
                }
            }
        };
        let elapsed = now_ms() - self.started_ms;
        Err(e
            .stamped(&self.request_id, self.cancel.attempts(), elapsed)
            .about(self.about.clone()))
    }
}

/// `value` checked by `check`, if any (see [`Check::check`]).
pub async fn checked(
    engine: &Engine,
    check: Option<&Check>,
    value: JsValue,
) -> Result<JsValue, CallError> {
    match check {
        None => Ok(value),
        Some(c) => c.check(engine, value).await,
    }
}
