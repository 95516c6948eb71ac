//! The `Request` one attempt sends when its client has header functions,
//! an auth token or request hooks: a fresh copy of the call's request, the
//! client's header functions and token applied to it, then the
//! `beforeRequest` hooks (`hooks.rs`).
//!
//! Why a copy per attempt: a retry carries the current token and headers,
//! never the previous attempt's, and a hook that changes `request.headers`
//! in place changes that attempt only. What the call gave itself wins: a
//! header function or the token never replaces a header of the call's own
//! (its `Authorization` above all). These run inside the attempt, so its
//! timeout, the deadline and an abort end the wait for them; one that
//! fails ends the call before anything is sent (`Ended::Hook`).

use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Headers, Request, RequestInit};

use super::call::{Call, Target};
use super::errors::CallError;
use super::hooks::{self, failed};
use super::host::assign;
use super::options::{pair_of, pairs};

/// The attempt's Request, and the refreshes finished when the token it
/// carries was read (`None`: it carries no token of the client's).
pub async fn prepare(call: &Call, info: &JsValue) -> Result<(Request, Option<u64>), CallError> {
    let request = fresh(&call.target).map_err(|e| {
        failed(
            "hooks",
            "the request could not be copied for its attempt",
            e,
        )
    })?;
    let headers = request.headers();
    let layer = call.layer();
    for f in &layer.headers {
        let given = hooks::call(f, &Array::new())
            .await
            .map_err(|e| failed("headers", "the headers function threw or rejected", e))?;
        apply(&headers, &given, call).map_err(|e| {
            failed(
                "headers",
                "the headers function must give headers (an object, Headers or pairs of strings)",
                e,
            )
        })?;
    }
    let mut seen = None;
    if let Some(auth) = &layer.auth {
        let token = auth.token().await?;
        if let (Some(value), false) = (token.header, call.own_header("authorization")) {
            headers
                .set("authorization", &value)
                .map_err(|e| failed("auth", "auth.token() gave an invalid header value", e))?;
            seen = Some(token.seen);
        }
    }
    let request = hooks::before_request(&layer.hooks.before_request, request, info).await?;
    Ok((request, seen))
}

/// A copy of what the call sends, with headers and a body of its own.
fn fresh(target: &Target) -> Result<Request, JsValue> {
    match target {
        Target::Url { url, init, .. } => {
            // The call's init without the signal an earlier attempt left on it.
            let own: RequestInit = assign(&RequestInit::new(), init)?.unchecked_into();
            own.set_signal(None);
            Request::new_with_str_and_init(&url.as_string().unwrap_or_default(), &own)
        }
        Target::Request { request, .. } => request.clone(),
    }
}

/// Sets what a header function gave (`undefined` values skipped), except
/// the call's own headers.
fn apply(headers: &Headers, given: &JsValue, call: &Call) -> Result<(), JsValue> {
    if given.is_undefined() || given.is_null() {
        return Ok(());
    }
    if !given.is_object() {
        return Err(JsValue::UNDEFINED);
    }
    for pair in pairs(given)?.iter() {
        let (name, value) = pair_of(&pair).ok_or(JsValue::UNDEFINED)?;
        let name = name.as_string().ok_or(JsValue::UNDEFINED)?;
        if value.is_undefined() || call.own_header(&name.to_ascii_lowercase()) {
            continue;
        }
        headers.set(&name, &value.as_string().ok_or(JsValue::UNDEFINED)?)?;
    }
    Ok(())
}
