//! One attempt: a fresh `AbortController` per attempt, the attempt timer, the
//! host's `fetch`, and the body read that belongs to the attempt.
//!
//! For `request()` an attempt lasts until its body is read and parsed, so
//! the timer and the caller's signal reach the body read too; for `fetch()`
//! it ends when the headers arrive and the body is the caller's.

use std::cell::{Cell, RefCell};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortSignal, RequestInit};

use super::call::{Call, Mode, Prepared, ResponseType, Target};
use super::cancel::Cancel;
use super::convert::{get, key};
use super::errors::{CallError, ErrorKind};
use super::events::Listeners;
use super::hooks::flag;
use super::host::{
    assign, either_signal, epoch_ms, instance_of, json_parse, now_ms, quiet, realm, to_promise,
    Class,
};
use super::runtime::{settle, Alarm, Apart, Either, Race, Settle, Stop};
use super::transport::Transport;
use crate::policy::guard::{Attempt, Ended, Phase};
use crate::policy::ratelimit::{self, Quota};
use crate::text::cat;

// What the host's fetch resolves with is only trusted as far as it is
// checked: a test's stand-in may give `undefined`, a plain object, or a
// polyfill's Response without `body.getReader`. Every read of it is a
// `catch` binding, so a throw becomes an Err here (a NetworkError for the
// attempt) and never unwinds through wasm frames, which would leave the
// call's state borrowed and trap the module at the next touch.
#[wasm_bindgen]
extern "C" {
    type AnyResponse;
    #[wasm_bindgen(method, getter, catch)]
    fn status(this: &AnyResponse) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, getter, catch, js_name = statusText)]
    fn status_text(this: &AnyResponse) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, getter, catch)]
    fn headers(this: &AnyResponse) -> Result<AnyHeaders, JsValue>;
    #[wasm_bindgen(method, getter, catch)]
    fn body(this: &AnyResponse) -> Result<AnyStream, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn text(this: &AnyResponse) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = arrayBuffer)]
    fn array_buffer(this: &AnyResponse) -> Result<JsValue, JsValue>;

    type AnyHeaders;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn get_header(this: &AnyHeaders, name: &str) -> Result<JsValue, JsValue>;

    type AnyStream;
    #[wasm_bindgen(method, getter, catch)]
    fn locked(this: &AnyStream) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = getReader)]
    fn get_reader(this: &AnyStream) -> Result<AnyReader, JsValue>;
    #[wasm_bindgen(method, catch, js_name = cancel)]
    fn cancel_stream(this: &AnyStream) -> Result<JsValue, JsValue>;

    type AnyReader;
    #[wasm_bindgen(method, catch)]
    fn read(this: &AnyReader) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = cancel)]
    fn cancel_read(this: &AnyReader) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen(module = "/src/web/fetch.js")]
extern "C" {
    /// Whether `headers` has any of `names` (fetch.js; true when asking throws).
    #[wasm_bindgen(js_name = hasAny)]
    fn has_any(headers: &AnyHeaders, names: &js_sys::Array) -> bool;
}

/// The TypeError an attempt fails with when the host's fetch gave
/// something that is not a usable Response.
fn not_a_response(what: &str) -> JsValue {
    js_sys::TypeError::new(&cat(&["fetch did not resolve with a Response: ", what])).into()
}

/// Awaits whatever a stand-in's method returned, promise or not.
fn settle_any(v: JsValue) -> Settle {
    settle(to_promise(&v))
}

/// How an attempt ended.
pub enum AttemptEnd {
    /// 2xx: the parsed body (`request()`) or the Response (`fetch()`).
    Done(JsValue),
    /// A non-2xx answer. `body` is the first 1024 UTF-16 units of the text
    /// for `request()` (the rest is never read; what arrived, if the body
    /// stalls or fails), undefined for `fetch()`.
    Status {
        status: u16,
        status_text: String,
        retry_after: Option<String>,
        /// A 429/503 without Retry-After: the wait its rate-limit fields
        /// ask for (when the call honours Retry-After).
        reset_ms: Option<f64>,
        response: JsValue,
        body: JsValue,
        /// What the wrapper's `UserFns::read` said of the auth token it carried
        /// (the token and the refreshes finished when it was read; `None`:
        /// it carried no token of the client's), handed back to
        /// `UserFns::refreshed` as it was given.
        token: Option<JsValue>,
    },
    Network(JsValue),
    /// Its time ran out after its request went out, in this phase.
    Timeout(Phase),
    Cancelled,
    Parse(JsValue),
    /// A hook, header function or token failed (`sent`: after the request
    /// went out, in `afterResponse`).
    Hook {
        error: CallError,
        sent: bool,
    },
}

impl AttemptEnd {
    /// How this end reads to the policy core. `offline`: the host reports
    /// no network (only asked of a network error).
    pub fn as_ended(&self, offline: bool) -> Ended<'_> {
        match self {
            AttemptEnd::Done(_) => Ended::Success,
            AttemptEnd::Parse(_) => Ended::Parse,
            AttemptEnd::Cancelled => Ended::Cancelled,
            AttemptEnd::Timeout(_) => Ended::Timeout,
            AttemptEnd::Network(_) => Ended::Network { offline },
            AttemptEnd::Hook { sent, .. } => Ended::Hook { sent: *sent },
            AttemptEnd::Status {
                status,
                retry_after,
                reset_ms,
                ..
            } => Ended::Status {
                status: *status,
                retry_after: retry_after.as_deref(),
                reset_ms: *reset_ms,
            },
        }
    }

    /// The error a failed attempt (a status, a network error, a timeout)
    /// ends the call with, shown to `retry.retryOn` before it is settled.
    pub fn error(&self, cancel: &Cancel, offline: bool) -> Option<CallError> {
        let copy = match self {
            AttemptEnd::Status {
                status,
                status_text,
                response,
                body,
                ..
            } => AttemptEnd::Status {
                status: *status,
                status_text: status_text.clone(),
                retry_after: None,
                reset_ms: None,
                response: response.clone(),
                body: body.clone(),
                token: None,
            },
            AttemptEnd::Network(cause) => AttemptEnd::Network(cause.clone()),
            AttemptEnd::Timeout(phase) => AttemptEnd::Timeout(*phase),
            _ => return None,
        };
        copy.into_result(cancel, offline).err().map(|(e, _)| e)
    }

    /// The value a call resolves with (a 2xx), or the error this attempt
    /// ends it with and, for a status, its Response (`fetch()` resolves
    /// with the last one). `offline`: the host reported no network after a
    /// network error; `cancel`: the call's, whose reason an abort carries.
    pub fn into_result(
        self,
        cancel: &Cancel,
        offline: bool,
    ) -> Result<JsValue, (CallError, Option<JsValue>)> {
        let kind = match self {
            AttemptEnd::Done(v) => return Ok(v),
            AttemptEnd::Parse(cause) => ErrorKind::Parse { cause },
            AttemptEnd::Cancelled => return Err((cancel.abort_error(), None)),
            AttemptEnd::Timeout(phase) => ErrorKind::Timeout { phase },
            AttemptEnd::Network(cause) => ErrorKind::Network { cause, offline },
            AttemptEnd::Hook { error, .. } => return Err((error, None)),
            AttemptEnd::Status {
                status,
                status_text,
                response,
                body,
                ..
            } => {
                let content_type = content_type(&response, &body);
                let e = CallError::new(ErrorKind::Http {
                    status,
                    status_text,
                    body,
                    content_type,
                });
                return Err((e, Some(response)));
            }
        };
        Err((CallError::new(kind), None))
    }
}

/// The attempt that decides a round of attempts (one, or more with hedges),
/// as it was sent, and what its answer announced of the rate limit.
pub struct Decided {
    pub end: AttemptEnd,
    pub send: Attempt,
    pub quota: Option<Quota>,
}

/// The most of an error body that is ever read, in UTF-16 code units.
pub const ERROR_BODY_CHARS: u32 = 1024;

/// A non-2xx answer whose headers have arrived: from then on the status
/// decides the attempt, whatever happens to the body read.
struct Answered {
    status: u16,
    status_text: String,
    retry_after: Option<String>,
    reset_ms: Option<f64>,
    response: JsValue,
    body: js_sys::JsString,
    token: Option<JsValue>,
}

impl Answered {
    fn end(self) -> AttemptEnd {
        AttemptEnd::Status {
            status: self.status,
            status_text: self.status_text,
            retry_after: self.retry_after,
            reset_ms: self.reset_ms,
            response: self.response,
            body: self.body.into(),
            token: self.token,
        }
    }
}

impl AttemptEnd {
    /// A hook, header function or token of the client's failed with
    /// `error` (what the wrapper's `UserFns` rejected with).
    fn hook(error: JsValue, sent: bool) -> AttemptEnd {
        let error = CallError::new(ErrorKind::Thrown(error));
        AttemptEnd::Hook { error, sent }
    }

    /// The client's `afterResponse` hooks failed (`UserFns::after` rejected with
    /// `error`): a TypeError is the `Response.error()` one gave, a network
    /// error (`Err`), as fetch rejects where it would give one.
    fn after_hook(error: JsValue) -> Result<AttemptEnd, JsValue> {
        if error.is_instance_of::<js_sys::TypeError>() {
            return Err(error);
        }
        Ok(AttemptEnd::hook(error, true))
    }

    /// A 401 to an attempt that carried the client's auth token: what
    /// `UserFns::read` said of that token.
    pub fn unauthorized(&self) -> Option<&JsValue> {
        match self {
            AttemptEnd::Status {
                status: 401, token, ..
            } => token.as_ref(),
            _ => None,
        }
    }
}

/// Runs one attempt of the call's target with its own controller and a
/// timer of `timeout_ms`. The attempt is registered with the call's cancel
/// state, so a caller abort or `close()` aborts the network request itself;
/// the timer and a cancel also end the attempt when the host's fetch
/// ignores its signal. `stop` is its controller, or why none could be
/// made (the attempt then ends at once as a network error).
///
/// A hedge (`leg.hedge`) sends its own copy of the init, with `cache:
/// 'no-store'`: an attempt in flight has read the shared init already, or
/// is about to, and Chromium's HTTP cache lock would hold a second request
/// to the same URL until the first one's headers arrive.
pub async fn attempt(
    call: &Call,
    transport: &Transport,
    send: Attempt,
    stop: Result<Stop, JsValue>,
    leg: Leg<'_>,
) -> (AttemptEnd, Option<Quota>) {
    // No AbortController to be had: the attempt fails as a network error.
    let stop = match stop {
        Ok(stop) => stop,
        Err(e) => return (AttemptEnd::Network(e), None),
    };
    let cancel = &call.cancel;
    if cancel.is_cancelled() {
        return (AttemptEnd::Cancelled, None);
    }
    let attached = cancel.attach(&stop);
    // An adopted attempt's time ran from when it went out.
    let ms = match leg.adopted {
        Some(_) => (send.started_ms + send.timeout_ms - now_ms()).max(0.0),
        None => send.timeout_ms,
    };
    let timer = Alarm::stop(ms, &stop);
    let signal = match &call.mode {
        Mode::Fetch {
            body_signal: Some(caller),
        } => either_signal(&stop.signal(), caller),
        _ => stop.signal(),
    };
    let answered = RefCell::new(None);
    let quota = Cell::new(None);
    let at = Sending { send: &send, leg };
    let work = std::pin::pin!(run(call, transport, &signal, at, &answered, &quota));
    let end = Race(work, stop.wait()).await;
    drop((attached, timer));
    let error = match end {
        Either::Left(Ok(end)) => return (end, quota.get()),
        Either::Left(Err(e)) => e,
        Either::Right(_) => JsValue::UNDEFINED,
    };
    if cancel.is_cancelled() {
        return (AttemptEnd::Cancelled, None);
    }
    // Headers in, then the error body stalled or failed: the status decides.
    if let Some(a) = answered.take() {
        return (a.end(), quota.get());
    }
    if stop.timed_out() {
        (AttemptEnd::Timeout(send.phase), None)
    } else {
        (AttemptEnd::Network(error), None)
    }
}

/// How one attempt of a round goes out.
pub struct Leg<'a> {
    /// Not the first attempt of its round.
    pub hedge: bool,
    /// What was settled for the round before its admission
    /// (`driver::prepare`): the Request the client's hooks left, if any,
    /// and what its header functions and token gave.
    pub prepared: &'a Prepared,
    /// Where the attempt is announced (an `attempt` event) as its request
    /// goes out.
    pub events: &'a Listeners,
    /// The answer of an attempt the boot build sent (`Call::adopt`): read
    /// as this attempt's instead of sending one.
    pub adopted: Option<&'a JsValue>,
}

/// Which attempt `run` makes, and how.
struct Sending<'a> {
    send: &'a Attempt,
    leg: Leg<'a>,
}

impl Sending<'_> {
    /// The request goes out: an `attempt` event.
    fn went(&self, call: &Call) {
        announce(call, self.send, &self.leg);
    }
}

/// The `attempt` event of `send` (as its request goes out, or as the
/// engine adopts one the boot build sent).
pub fn announce(call: &Call, send: &Attempt, leg: &Leg<'_>) {
    leg.events.emit_call("attempt", call, send.attempt, &|o| {
        o.times.elapsed_ms = Some(send.elapsed_ms);
        o.times.remaining_ms = Some(send.remaining_ms);
    });
}

/// The attempt itself. With `call.spec.cfg.rate_limit`, the quota the answer
/// announces goes into `quota` as soon as its headers are in. A client
/// with hooks, header functions or auth sends the Request made for the
/// round before its admission (by the wrapper's `UserFns`, `hooks.rs`) and may
/// replace the Response (`afterResponse`).
async fn run(
    call: &Call,
    transport: &Transport,
    signal: &AbortSignal,
    at: Sending<'_>,
    answered: &RefCell<Option<Answered>>,
    quota: &Cell<Option<Quota>>,
) -> Result<AttemptEnd, JsValue> {
    let fns = call.layer().fns(flag::PER_ATTEMPT);
    let own = at.leg.prepared.request().map(Target::request);
    let token = at.leg.prepared.seen();
    at.went(call);
    let target = own.as_ref().unwrap_or(&call.target);
    let mut value = match at.leg.adopted {
        Some(answer) => answer.clone(),
        None => settle(send(call, transport, target, signal, at.leg.hedge)?).await?,
    };
    if let (Some(fns), Some(Target::Request { request, .. })) = (fns, &own) {
        match settle(fns.after(request, &value, &call.context(at.send.attempt))).await {
            Ok(v) => value = v,
            Err(e) => {
                discard(&value);
                return AttemptEnd::after_hook(e);
            }
        }
    }
    if !value.is_object() {
        return Err(not_a_response(
            &value.js_typeof().as_string().unwrap_or_default(),
        ));
    }
    let resp: AnyResponse = value.unchecked_into();
    let status = resp
        .status()?
        .as_f64()
        .filter(|s| s.fract() == 0.0 && (0.0..1000.0).contains(s))
        .ok_or_else(|| not_a_response("no numeric status"))? as u16;
    let (announced, retry_after, reset_ms) = fields(call, &resp, status);
    quota.set(announced);
    if (200..300).contains(&status) {
        return Apart(read_ok(resp, call.mode.response_type())).await;
    }
    let status_text = resp.status_text()?.as_string().unwrap_or_default();
    let stream = resp.body()?;
    *answered.borrow_mut() = Some(Answered {
        status,
        status_text,
        retry_after,
        reset_ms,
        response: resp.into(),
        body: js_sys::JsString::from(""),
        token,
    });
    if !call.mode.is_fetch() {
        if let Err(e) = Apart(read_prefix(&stream, ERROR_BODY_CHARS, answered)).await {
            answered.take();
            return Err(e);
        }
    }
    answered.take().map(Answered::end).ok_or(JsValue::UNDEFINED)
}

/// Sends `target` with `signal` through the client's transport. A hedge
/// sends its own copy of the init, with `cache: 'no-store'`.
fn send(
    call: &Call,
    transport: &Transport,
    target: &Target,
    signal: &AbortSignal,
    hedge: bool,
) -> Result<js_sys::Promise, JsValue> {
    let own = |base: &JsValue| -> Result<RequestInit, JsValue> {
        let init: RequestInit = assign(&RequestInit::new(), base)?.unchecked_into();
        js_sys::Reflect::set(&init, &"cache".into(), &"no-store".into())?;
        Ok(init)
    };
    let fns = call.layer().any_fns();
    Ok(match target {
        Target::Url { url, init, .. } if hedge => {
            let init = own(init)?;
            init.set_signal(Some(signal));
            transport.send(fns, url, &init)
        }
        Target::Url { url, init, .. } => {
            init.set_signal(Some(signal));
            transport.send(fns, url, init)
        }
        Target::Request { request, reuse } => {
            let init = if hedge {
                own(&JsValue::UNDEFINED)?
            } else {
                RequestInit::new()
            };
            init.set_signal(Some(signal));
            // An init that is not empty resets a Request's referrer and
            // referrer policy (the Request constructor's "if init is not
            // empty" step): every attempt gives them back as it holds them.
            for name in ["referrer", "referrerPolicy"] {
                let key = key(name);
                js_sys::Reflect::set(&init, &key, &js_sys::Reflect::get(request, &key)?)?;
            }
            if *reuse {
                transport.send(fns, request, &init)
            } else {
                transport.send(fns, &JsValue::from(request.clone()?), &init)
            }
        }
    })
}

/// A 2xx: the Response for `fetch()` (`None`) and `responseType:
/// 'response'`, else its body read and parsed as `request()` asks.
async fn read_ok(resp: AnyResponse, rt: Option<ResponseType>) -> Result<AttemptEnd, JsValue> {
    // One await for every body type: the read is chosen, then checked.
    let read = match rt {
        None | Some(ResponseType::Response) => return Ok(AttemptEnd::Done(resp.into())),
        Some(ResponseType::Bytes) => resp.array_buffer()?,
        Some(ResponseType::Text | ResponseType::Json) => resp.text()?,
    };
    let body = settle_any(read).await?;
    let value = match rt {
        Some(ResponseType::Bytes) => {
            if !instance_of(&body, Class::ArrayBuffer) {
                return Err(not_a_response("arrayBuffer() gave no ArrayBuffer"));
            }
            js_sys::Uint8Array::new(&body).into()
        }
        Some(ResponseType::Json) => {
            let Some(text) = body.dyn_ref::<js_sys::JsString>() else {
                return Err(not_a_response("text() gave no string"));
            };
            // An empty (or blank) body is undefined, not a ParseError;
            // looked at only when the parse fails.
            match json_parse(text) {
                Ok(v) => v,
                Err(_) if text.trim().length() == 0 => JsValue::UNDEFINED,
                Err(e) => return Ok(AttemptEnd::Parse(e)),
            }
        }
        _ if !body.is_string() => return Err(not_a_response("text() gave no string")),
        _ => body,
    };
    Ok(AttemptEnd::Done(value))
}

/// The error response's content type (a string, else undefined), for
/// `request()` (whose error body was read): the JS wrapper parses the body
/// into `HttpError.data` when it names JSON (pkg-template/core.js, toError).
fn content_type(response: &JsValue, body: &JsValue) -> JsValue {
    if !body.is_string() {
        return JsValue::UNDEFINED;
    }
    response
        .unchecked_ref::<AnyResponse>()
        .headers()
        .ok()
        .and_then(|h| h.get_header("content-type").ok())
        .unwrap_or_default()
}

/// What an answer's fields say: the quota it announces (if the call obeys
/// rate limits) and, for a non-2xx, its Retry-After and (a 429/503 without
/// one, when the call honours Retry-After) the wait its rate-limit reset
/// asks for. Out of line: kept out of the attempt's state machine.
#[inline(never)]
fn fields(
    call: &Call,
    resp: &AnyResponse,
    status: u16,
) -> (Option<Quota>, Option<String>, Option<f64>) {
    let headers = resp.headers().ok();
    let field = |name: &str| {
        headers
            .as_ref()
            .and_then(|h| h.get_header(name).ok())
            .and_then(|v| v.as_string())
    };
    // Most responses announce no quota: one host call says so, instead of
    // the four lookups `read` would make to find nothing.
    let announced = |h: &AnyHeaders| has_any(h, &realm().announcing);
    let quota = if call.spec.cfg.rate_limit && headers.as_ref().is_some_and(announced) {
        ratelimit::read(field, epoch_ms())
    } else {
        None
    };
    if (200..300).contains(&status) {
        return (quota, None, None);
    }
    let retry_after = field("retry-after");
    let honours = call.spec.cfg.retry.as_ref().is_some_and(|r| r.retry_after);
    let reset_ms = if honours && retry_after.is_none() && (status == 429 || status == 503) {
        ratelimit::refusal_wait_ms(field, epoch_ms())
    } else {
        None
    };
    (quota, retry_after, reset_ms)
}

/// Reads at most `max` UTF-16 units of an error body as text into
/// `answered`, chunk by chunk, then cancels the stream so the rest is never
/// downloaded. The text is cut at a code point boundary: never a lone high
/// surrogate at the end. A stream that fails or stalls (the attempt's
/// timer aborts it) keeps what came; an Err is a body that is no stream
/// (a stand-in's), which fails the attempt.
async fn read_prefix(
    body: &AnyStream,
    max: u32,
    answered: &RefCell<Option<Answered>>,
) -> Result<(), JsValue> {
    if body.is_null() || body.is_undefined() {
        return Ok(());
    }
    let reader = body.get_reader()?;
    let decoder = web_sys::TextDecoder::new()?;
    let stream = web_sys::TextDecodeOptions::new();
    stream.set_stream(true);
    let keep = |part: &str| {
        if let Some(a) = answered.borrow_mut().as_mut() {
            let text = a.body.concat(&JsValue::from_str(part));
            a.body = cut(&text, max);
        }
    };
    loop {
        let Ok(chunk) = settle_any(reader.read()?).await else {
            return Ok(());
        };
        if get(&chunk, "done")?.is_truthy() {
            keep(&decoder.decode()?);
            return Ok(());
        }
        let bytes: js_sys::Object = get(&chunk, "value")?.unchecked_into();
        keep(&decoder.decode_with_buffer_source_and_options(&bytes, &stream)?);
        if answered
            .borrow()
            .as_ref()
            .is_none_or(|a| a.body.length() >= max)
        {
            if let Ok(p) = reader.cancel_read() {
                quiet(&p);
            }
            return Ok(());
        }
    }
}

/// The first `max` UTF-16 units of `text`, one fewer if the last would be
/// the first half of a surrogate pair.
fn cut(text: &js_sys::JsString, max: u32) -> js_sys::JsString {
    if text.length() <= max {
        return text.clone();
    }
    let high = (55296.0..56320.0).contains(&text.char_code_at(max - 1)); // U+D800..U+DBFF
    let end = if high { max - 1 } else { max };
    text.slice(0, end)
}

/// Releases the body of a response that will not be handed to anyone.
pub fn discard(resp: &JsValue) {
    let Ok(body) = resp.unchecked_ref::<AnyResponse>().body() else {
        return;
    };
    if !body.is_object() {
        return;
    }
    // request() has already read (and cancelled) its prefix through a
    // reader; a locked stream is not ours to cancel again.
    if body.locked().is_ok_and(|l| l.is_falsy()) {
        if let Ok(p) = body.cancel_stream() {
            quiet(&p);
        }
    }
}
