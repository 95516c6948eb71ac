//! One logical call as the driver runs it: what it sends, how it reads
//! the answer, its settings and its cancel state, fixed before its first
//! attempt. A module of its own, so the attempt (`fetch.rs`) and the call
//! driver (`driver.rs`) both use it without importing each other.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{AbortSignal, Headers, Request, RequestInit};

use super::cancel::Cancel;
use super::convert::{get, Obj};
use super::errors::{CallError, ErrorKind};
use super::hooks::{flag, UserFns};
use super::host::now_ms;
use super::layer::Layer;
use crate::policy::classify::RetryDenied;
use crate::policy::credentials::Credentials;
use crate::policy::guard::Phase;
use crate::policy::guard::Spec;

pub use crate::policy::call_options::ResponseType;

/// Everything one logical call needs, fixed before its first attempt.
pub struct Call {
    pub request_id: String,
    /// The absolute URL without userinfo, for events.
    pub url: String,
    /// What the policy core decides by: method, breaker key, idempotency,
    /// settings.
    pub spec: Spec,
    /// What every attempt sends.
    pub target: Target,
    pub mode: Mode,
    pub cancel: Cancel,
    /// The client that made it: its hooks, auth, header functions.
    layer: Rc<Layer>,
    /// Its own `retry.retryOn` (else its client's, the `UserFns`'s).
    retry_on: Option<JsValue>,
    /// The header names (lower case, one per line) the call gave itself,
    /// which the client's header functions and auth token never replace.
    own: String,
    /// What its first attempt sends, settled before the call joined or
    /// led a shared network call (whose identity its credentials are
    /// part of), or how that ended it: taken by the first attempt.
    first: Cell<Option<Result<Prepared, Halt>>>,
    /// When that began, if it did: the call's deadline runs from then.
    since: Option<f64>,
    /// Its first attempt, sent before the engine was in (see `Adopted`).
    adopted: Cell<Option<Adopted>>,
}

/// A call's first attempt that the boot build (`src/boot.rs`,
/// pkg-template/boot.js) sent before the engine was in, and how it went:
/// the engine adopts it as the call's first attempt (`Engine::adopted`).
pub struct Adopted {
    /// When it went out (`performance.now()`; with `Unsent`, when the
    /// call was made): the call's deadline runs from then.
    pub started_ms: f64,
    pub end: AdoptedEnd,
    /// The call's deadline passed before the engine was in: it ends now,
    /// whatever the engine's clock says, and sends nothing more.
    pub late: bool,
}

/// How an adopted attempt ended.
pub enum AdoptedEnd {
    /// A 2xx the boot build delivered to the caller: only its sample.
    Delivered,
    /// Any other answer: its Response, the body unread, read as the
    /// engine reads its own attempts' answers.
    Answer(JsValue),
    /// A 2xx whose body did not parse (the parse error).
    Parse(JsValue),
    /// The host's fetch rejected (its error).
    Network(JsValue),
    /// Its time ran out.
    Timeout,
    /// The caller aborted it.
    Cancelled,
    /// None went: the call was aborted, or its deadline passed (`late`),
    /// while it waited for the engine.
    Unsent,
}

impl Call {
    pub fn new(
        request_id: String,
        url: String,
        spec: Spec,
        target: Target,
        mode: Mode,
        layer: Rc<Layer>,
        own: String,
    ) -> Call {
        Call {
            request_id,
            url,
            spec,
            target,
            mode,
            cancel: Cancel::default(),
            layer,
            retry_on: None,
            own,
            first: Cell::new(None),
            since: None,
            adopted: Cell::new(None),
        }
    }

    /// Its first attempt was sent before the engine was in (`adopted`, if
    /// any: see `Client::adopt`): adopted, the call's deadline running from
    /// when it went, and never shared (it is its own network call). One
    /// copy for the three methods that take it.
    #[inline(never)]
    pub fn adopt(&mut self, adopted: Option<Adopted>) {
        let Some(adopted) = adopted else { return };
        self.since = Some(adopted.started_ms);
        // Its deadline passed while it waited for the engine: it is over now.
        if adopted.late {
            self.spec.cfg.deadline_ms = (now_ms() - adopted.started_ms).max(0.0);
        }
        if let Mode::Request { share, .. } = &mut self.mode {
            *share = None;
        }
        self.adopted.set(Some(adopted));
    }

    /// The attempt sent before the engine was in, once.
    pub fn take_adopted(&self) -> Option<Adopted> {
        self.adopted.take()
    }

    /// Its deadline passed before the engine was in (`Adopted::late`).
    pub fn is_late(&self) -> bool {
        let a = self.adopted.take();
        let late = a.as_ref().is_some_and(|a| a.late);
        self.adopted.set(a);
        late
    }

    /// The call with its `retry.retryOn`.
    pub fn with_retry_on(mut self, f: Option<JsValue>) -> Call {
        self.retry_on = f;
        self
    }

    /// The `UserFns` to call its `retry.retryOn` through, and the function if
    /// its own (`undefined`: its client's): none when neither has one.
    pub fn retry_on(&self) -> Option<(&UserFns, JsValue)> {
        let own = self.retry_on.clone();
        match own {
            Some(f) => self.layer.any_fns().map(|fns| (fns, f)),
            None => self
                .layer
                .fns(flag::RETRY_ON)
                .map(|fns| (fns, JsValue::UNDEFINED)),
        }
    }

    /// What the first attempt sends, settled already from `since` on (see
    /// `first`).
    pub fn set_first(&mut self, since: f64, first: Result<Prepared, Halt>) {
        self.since = Some(since);
        self.first.set(Some(first));
    }

    /// When the call's deadline began, if it has.
    pub fn since(&self) -> Option<f64> {
        self.since
    }

    /// What was settled for this attempt before, once.
    pub fn take_first(&self) -> Option<Result<Prepared, Halt>> {
        self.first.take()
    }

    pub fn layer(&self) -> &Rc<Layer> {
        &self.layer
    }

    /// The header names the call gave itself, lower case, one per line.
    pub fn own(&self) -> &str {
        &self.own
    }

    /// Attempt `attempt`'s context as its client's hooks see it (README,
    /// "Hooks"), made anew for each call of the `UserFns` that runs them:
    /// `{ requestId, attempt, method, url }`.
    pub fn context(&self, attempt: u32) -> JsValue {
        let o = Obj::new();
        o.set("requestId", self.request_id.as_str())
            .set("attempt", attempt)
            .set("method", self.spec.method.as_str())
            .set("url", self.url.as_str());
        o.into_js()
    }

    /// GET and HEAD: what they fetch is named by the URL (and headers)
    /// alone, so they may share a flight and a default cache key.
    pub fn named_by_url(&self) -> bool {
        self.spec.method == "GET" || self.spec.method == "HEAD"
    }
}

/// Why the call loop stops before an attempt: an error as it is, or the
/// deadline (which ends the call with the failure its last retry was
/// planned after, when there was one).
pub enum Halt {
    Error(CallError),
    OutOfTime,
    /// A retry the budget denied after all (`Stop::Budget`): the call
    /// ends with the failure it was planned after.
    Denied,
}

impl Halt {
    /// The call's error: a deadline or a budget denial ends it with the
    /// failure its last retry was planned after (`last`), when there was
    /// one, else with a TimeoutError.
    pub fn ended(self, last: Option<CallError>) -> CallError {
        let why = match self {
            Halt::Error(e) => return e,
            Halt::OutOfTime => RetryDenied::Deadline,
            Halt::Denied => RetryDenied::Budget,
        };
        match last {
            Some(e) => e.denied(why),
            None => CallError::new(ErrorKind::Timeout {
                phase: Phase::Deadline,
            }),
        }
    }
}

impl From<CallError> for Halt {
    fn from(e: CallError) -> Halt {
        Halt::Error(e)
    }
}

/// What one attempt sends, settled before its admission
/// (`driver::prepare`): what the client's `UserFns` gave, `{ request, seen }`
/// (`UserFns::prepare`), or undefined for a client without one, whose attempts
/// send the call's own target.
pub struct Prepared(pub JsValue);

impl Prepared {
    /// The Request the client's hooks left, sent as it is.
    pub fn request(&self) -> Option<Request> {
        if self.0.is_undefined() {
            return None;
        }
        get(&self.0, "request").ok().map(JsCast::unchecked_into)
    }

    /// What `UserFns::prepare` said of the auth token it carries (the token and
    /// the refreshes finished when it was read, for `UserFns::refreshed`;
    /// `None`: it carries no token of the client's). Not asked without an
    /// `UserFns`: Reflect.get would throw, and a JS exception costs a call 25-30 µs.
    pub fn seen(&self) -> Option<JsValue> {
        if self.0.is_undefined() {
            return None;
        }
        get(&self.0, "seen").ok().filter(|v| !v.is_undefined())
    }
}

/// What every attempt of a call sends.
pub enum Target {
    /// `fetch(url, init)` with the call's own init, whose signal is set anew
    /// for each attempt: a call without a body or FetchInit fields builds no
    /// Request at all.
    Url {
        url: JsValue,
        init: RequestInit,
        /// None when the call sends no headers of its own.
        headers: Option<Headers>,
    },
    /// A built Request: the caller's own, or one with a body or FetchInit
    /// fields (and so their checks: a no-cors Request's headers). A body can be
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

    /// What the client's `UserFns` copies for an attempt: the Request, or the
    /// URL and init.
    pub fn parts(&self) -> (JsValue, JsValue) {
        match self {
            Target::Url { url, init, .. } => (url.clone(), init.clone().into()),
            Target::Request { request, .. } => (JsValue::from(request), JsValue::UNDEFINED),
        }
    }

    /// The headers every attempt sends (live: a header set here is sent);
    /// None for a call without a body or headers of its own.
    pub fn headers(&self) -> Option<Headers> {
        match self {
            Target::Url { headers, .. } => headers.clone(),
            Target::Request { request, .. } => Some(request.headers()),
        }
    }

    /// Its own settings may make the host reject it (see
    /// `Spec::refusable`): `redirect` other than 'follow', an `integrity`,
    /// or `cache: 'only-if-cached'`, read from the Request (or the init a
    /// keepalive fetch(url, init) sends).
    pub fn refusable(&self) -> bool {
        let from: &JsValue = match self {
            Target::Url { init, .. } => init.as_ref(),
            Target::Request { request, .. } => request.as_ref(),
        };
        let read = |k| get(from, k).ok().and_then(|v| v.as_string());
        // 'follow' and '' are what a Request reads when not given.
        let given = |k, usual: &str| read(k).is_some_and(|v| v != usual);
        given("redirect", "follow")
            || given("integrity", "")
            || read("cache").is_some_and(|c| c == "only-if-cached")
    }

    /// Whom the call speaks for: the identity of the credential headers it
    /// sends (the client's and its own). A header that cannot be read
    /// counts as one sent with an empty value: it never makes a call
    /// anonymous.
    pub fn credentials(&self) -> Credentials {
        self.headers()
            .map_or(Credentials::NONE, |h| credentials_of(&h))
    }
}

/// Whom headers `h` speak for (see [`Target::credentials`]).
pub fn credentials_of(h: &Headers) -> Credentials {
    Credentials::of(|name| match h.get(name) {
        Ok(v) => v,
        Err(_) => Some(String::new()),
    })
}

/// How a call hands back its answer.
pub enum Mode {
    /// `request()` reads and parses the body. `share`: the key under which
    /// identical calls share one network call (GET and HEAD, when `dedupe`
    /// is on; never shared between calls that differ in `prefer_cache`).
    Request {
        response_type: ResponseType,
        share: Option<String>,
    },
    /// `fetch()` hands back the Response. `body_signal`: the caller's
    /// signal, which every attempt's request also follows: once the call
    /// resolves, it can still abort the Response's body, as with the host's
    /// own fetch.
    Fetch { body_signal: Option<AbortSignal> },
}

impl Mode {
    pub fn request(response_type: ResponseType) -> Mode {
        Mode::Request {
            response_type,
            share: None,
        }
    }

    pub fn is_fetch(&self) -> bool {
        matches!(self, Mode::Fetch { .. })
    }

    /// A call whose network call identical calls may join.
    pub fn is_shared(&self) -> bool {
        matches!(self, Mode::Request { share: Some(_), .. })
    }

    /// `request()`'s response type; None for `fetch()`.
    pub fn response_type(&self) -> Option<ResponseType> {
        match self {
            Mode::Request { response_type, .. } => Some(*response_type),
            Mode::Fetch { .. } => None,
        }
    }
}
