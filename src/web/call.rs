//! One logical call as the engine runs it: what it sends, how it reads
//! the answer, its settings and its cancel state, fixed before its first
//! attempt. A module of its own, so the attempt (`fetch.rs`) and the
//! engine's loop both use it without importing each other.

use wasm_bindgen::JsValue;
use web_sys::{AbortSignal, Headers, Request, RequestInit};

use super::cancel::Cancel;
use crate::policy::guard::Spec;
use crate::policy::options::CallConfig;

pub use crate::policy::call_options::ResponseType;

/// Everything one logical call needs, fixed before its first attempt.
pub struct Call {
    pub request_id: String,
    pub method: String,
    /// The absolute URL without userinfo, for events.
    pub url: String,
    /// What every attempt sends.
    pub target: Target,
    pub mode: Mode,
    pub cfg: CallConfig,
    pub has_key: bool,
    pub breaker_key: String,
    pub cancel: Cancel,
    /// Set for `request()` GET/HEAD calls that may share a flight (never
    /// shared between calls that differ in `prefer_cache`).
    pub dedupe_key: Option<String>,
    /// `schema()`: an offline host or a Retry-After cooldown fails the call
    /// at once (the cache answers) instead of waiting, as an open breaker
    /// does.
    pub prefer_cache: bool,
    /// `fetch()`'s caller signal, which every attempt's request also
    /// follows: once the call resolves, it can still abort the Response's
    /// body, as with the host's own fetch.
    pub body_signal: Option<AbortSignal>,
}

impl Call {
    /// GET and HEAD: what they fetch is named by the URL (and headers)
    /// alone, so they may share a flight and a default cache key.
    pub fn named_by_url(&self) -> bool {
        self.method == "GET" || self.method == "HEAD"
    }

    /// What the policy core's decisions need to know of the call.
    pub fn spec(&self) -> Spec<'_> {
        Spec {
            key: &self.breaker_key,
            method: &self.method,
            has_key: self.has_key,
            cfg: &self.cfg,
            prefer_cache: self.prefer_cache,
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
