//! One attempt: a fresh `AbortController` per attempt, the attempt timer, the
//! host's `fetch`, and the body read that belongs to the attempt.
//!
//! For `request()` an attempt lasts until its body is read and parsed, so
//! the timer and the caller's signal reach the body read too; for `fetch()`
//! it ends when the headers arrive and the body is the caller's.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal, Headers, Request, RequestInit, Response};

use super::cancel::Alarm;
use super::convert::get;
use super::engine::Call;
use super::host::{either_signal, epoch_ms, global_fetch, json_parse};
use super::task::settle;
use crate::policy::ratelimit::{self, Quota};

/// What a call resolves with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ResponseType {
    Json,
    Text,
    Bytes,
    Response,
}

impl ResponseType {
    pub fn name(self) -> &'static str {
        match self {
            ResponseType::Json => "json",
            ResponseType::Text => "text",
            ResponseType::Bytes => "bytes",
            ResponseType::Response => "response",
        }
    }

    pub fn parse(s: &str) -> Option<ResponseType> {
        match s {
            "json" => Some(ResponseType::Json),
            "text" => Some(ResponseType::Text),
            "bytes" => Some(ResponseType::Bytes),
            "response" => Some(ResponseType::Response),
            _ => None,
        }
    }
}

/// What every attempt of a call sends.
pub enum Target {
    /// `fetch(url, init)` with the call's own init, whose signal is set anew
    /// for each attempt: a call without a body builds no Request at all.
    Url {
        url: JsValue,
        init: RequestInit,
        /// None when the call sends no headers of its own.
        headers: Option<Headers>,
    },
    /// A built Request: the caller's own, or one with a body. A body can be
    /// read once, so each attempt sends a clone unless `reuse` (GET and HEAD,
    /// which have none). Not `Request.body`: Firefox does not implement it,
    /// and a POST sent from the base itself left nothing for its retry.
    Request { request: Request, reuse: bool },
}

impl Target {
    pub fn request(request: Request) -> Target {
        let method = request.method();
        let reuse = method == "GET" || method == "HEAD";
        Target::Request { request, reuse }
    }

    /// The headers every attempt sends (live: a header set here is sent);
    /// None for a call without a body or headers of its own.
    pub fn headers(&self) -> Option<Headers> {
        match self {
            Target::Url { headers, .. } => headers.clone(),
            Target::Request { request, .. } => Some(request.headers()),
        }
    }
}

/// `request()` reads and parses the body; `fetch()` hands back the Response.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Request(ResponseType),
    Fetch,
}

/// How an attempt ended.
pub enum AttemptEnd {
    /// 2xx: the parsed body (`request()`) or the Response (`fetch()`).
    Done(JsValue),
    /// A non-2xx answer. `body` is the first 1024 UTF-16 units of the text
    /// for `request()` (the rest is never read), undefined for `fetch()`.
    Status {
        status: u16,
        status_text: String,
        retry_after: Option<String>,
        /// A 429/503 without Retry-After: the wait its rate-limit fields
        /// ask for (when the call honours Retry-After).
        reset_ms: Option<f64>,
        response: Response,
        body: JsValue,
    },
    Network(JsValue),
    Timeout,
    Cancelled,
    Parse(JsValue),
}

/// The most of an error body that is ever read, in UTF-16 code units.
pub const ERROR_BODY_CHARS: u32 = 1024;

/// Runs one attempt of the call's target with its own controller and a
/// timer of `timeout_ms`. The controller is registered with the call's
/// cancel state, so a caller abort or `close()` aborts the network request
/// itself. With the end comes the quota the answer announced, if the call
/// obeys rate limits and there was an answer.
pub async fn attempt(call: &Call, timeout_ms: f64) -> (AttemptEnd, Option<Quota>) {
    let cancel = &call.cancel;
    if cancel.is_cancelled() {
        return (AttemptEnd::Cancelled, None);
    }
    let ctl = match AbortController::new() {
        Ok(c) => c,
        Err(e) => return (AttemptEnd::Network(e), None),
    };
    cancel.set_attempt(Some(ctl.clone()));
    let timed_out = Rc::new(Cell::new(false));
    let _timer = Alarm::new(timeout_ms, &ctl, &timed_out);
    let signal = match &call.body_signal {
        Some(caller) => either_signal(&ctl.signal(), caller),
        None => ctl.signal(),
    };
    let mut quota = None;
    let end = run(call, &signal, &mut quota).await;
    cancel.set_attempt(None);
    let end = match end {
        Ok(end) => end,
        Err(_) if cancel.is_cancelled() => AttemptEnd::Cancelled,
        Err(_) if timed_out.get() => AttemptEnd::Timeout,
        Err(e) => AttemptEnd::Network(e),
    };
    (end, quota)
}

async fn run(
    call: &Call,
    signal: &AbortSignal,
    quota: &mut Option<Quota>,
) -> Result<AttemptEnd, JsValue> {
    let mode = call.mode;
    let sent = match &call.target {
        Target::Url { url, init, .. } => {
            init.set_signal(Some(signal));
            global_fetch(url, init)
        }
        Target::Request { request, reuse } => {
            let init = RequestInit::new();
            init.set_signal(Some(signal));
            if *reuse {
                global_fetch(request, &init)
            } else {
                global_fetch(&JsValue::from(request.clone()?), &init)
            }
        }
    };
    let resp: Response = settle(sent).await?.unchecked_into();
    let status = resp.status();
    let headers = resp.headers();
    let field = |name: &str| headers.get(name).ok().flatten();
    if call.cfg.rate_limit {
        *quota = ratelimit::read(field, epoch_ms());
    }
    if !(200..300).contains(&status) {
        let retry_after = field("retry-after");
        let honours = call.cfg.retry.as_ref().is_some_and(|r| r.retry_after);
        let reset_ms = if honours && retry_after.is_none() && (status == 429 || status == 503) {
            ratelimit::refusal_wait_ms(field, epoch_ms())
        } else {
            None
        };
        let body = match mode {
            Mode::Request(_) => read_prefix(&resp, ERROR_BODY_CHARS).await?,
            Mode::Fetch => JsValue::UNDEFINED,
        };
        return Ok(AttemptEnd::Status {
            status,
            status_text: resp.status_text(),
            retry_after,
            reset_ms,
            response: resp,
            body,
        });
    }
    let value = match mode {
        Mode::Fetch | Mode::Request(ResponseType::Response) => resp.into(),
        Mode::Request(ResponseType::Text) => settle(resp.text()?).await?,
        Mode::Request(ResponseType::Bytes) => {
            let buf = settle(resp.array_buffer()?).await?;
            js_sys::Uint8Array::new(&buf).into()
        }
        Mode::Request(ResponseType::Json) => {
            let text: js_sys::JsString = settle(resp.text()?).await?.unchecked_into();
            // An empty (or blank) body is undefined, not a ParseError;
            // looked at only when the parse fails.
            match json_parse(&text) {
                Ok(v) => v,
                Err(_) if text.trim().length() == 0 => JsValue::UNDEFINED,
                Err(e) => return Ok(AttemptEnd::Parse(e)),
            }
        }
    };
    Ok(AttemptEnd::Done(value))
}

/// Reads at most `max` UTF-16 units of the body as text, then cancels the
/// stream so the rest is never downloaded.
async fn read_prefix(resp: &Response, max: u32) -> Result<JsValue, JsValue> {
    let Some(body) = resp.body() else {
        return Ok(JsValue::from_str(""));
    };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let decoder = web_sys::TextDecoder::new()?;
    let stream = web_sys::TextDecodeOptions::new();
    stream.set_stream(true);
    let mut text = js_sys::JsString::from("");
    loop {
        let chunk = settle(reader.read()).await?;
        if get(&chunk, "done")?.is_truthy() {
            let tail = decoder.decode()?;
            text = text.concat(&JsValue::from_str(&tail));
            break;
        }
        let bytes: js_sys::Object = get(&chunk, "value")?.unchecked_into();
        let part = decoder.decode_with_buffer_source_and_options(&bytes, &stream)?;
        text = text.concat(&JsValue::from_str(&part));
        if text.length() >= max {
            let _ = reader.cancel();
            break;
        }
    }
    Ok(text.slice(0, max.min(text.length())).into())
}

/// Releases the body of a response that will not be handed to anyone.
pub fn discard(resp: &Response) {
    if let Some(body) = resp.body() {
        // request() has already read (and cancelled) its prefix through a
        // reader; a locked stream is not ours to cancel again.
        if !body.locked() {
            let _ = body.cancel();
        }
    }
}
