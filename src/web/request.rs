//! Building one call from `request()`'s or `fetch()`'s arguments: the URL
//! (resolved against `baseUrl` or the page, userinfo refused: `url.rs`), the headers
//! (the client's, the call's, an `Idempotency-Key`), the body (plain
//! objects as JSON), the init or Request every attempt sends, and the
//! call's breaker and dedupe keys. Every failure of `request()` here is an
//! `OptionsError` naming the option; `fetch()` fails as the host's fetch
//! does on what the `Request` constructor refuses (`Refused::Host`), and
//! with an `OptionsError` only for stormguard's own options. The rules on
//! plain values are the policy core's (`policy::call_options`), this module
//! only reads JS and builds.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortSignal, Headers, Request, RequestInit, Url};

use super::call::{Call, Mode, ResponseType, Target};
use super::engine::Engine;
use super::fetch_init::{Fields, InitView};
use super::host::{instance_of, location_href, new_request, uuid_v4, Class};
use super::layer::Layer;
use super::options::{is_dictionary, read_call, read_idempotency_key, read_signal, Reader};
use super::url::{endpoint, parse_href, read_base, within, Base};
use crate::policy::call_options::{self, header_idempotency_key, query_value, IdemKey, Scalar};
use crate::policy::guard::Spec;
use crate::policy::key;
use crate::policy::options::{CallConfig, ClientConfig, OptionsError};
use crate::text::{cat, decimal};

type Result<T> = std::result::Result<T, OptionsError>;

/// A built call and the caller's signal, which the engine links.
pub type Built = (Call, Option<AbortSignal>);

/// A call's own `headers` as given (an undefined value, `None`, removes the client's).
pub type OwnHeaders = Vec<(String, Option<String>)>;

/// Why `fetch()` refused its arguments: one of stormguard's own options,
/// or what the host refused (the Request constructor's TypeError, a
/// getter's exception), to reject with as it was thrown.
pub enum Refused {
    Options(OptionsError),
    Host(JsValue),
}

impl From<OptionsError> for Refused {
    fn from(e: OptionsError) -> Refused {
        Refused::Options(e)
    }
}

/// What the client adds to each call it builds.
pub struct Builder {
    /// What its relative URLs resolve against.
    base: Base,
    /// Its `headers` (an undefined value, `None`, is sent as none).
    headers: Vec<(String, Option<String>)>,
    /// The client's FetchInit defaults.
    defaults: Fields,
    /// Prefixes this client's request ids.
    tag: String,
    /// The client's settings every call's options are merged over (a
    /// derived client's own, the engine's for the root).
    pub cfg: ClientConfig,
    /// The client's place among derived clients, and its hooks, auth and
    /// header functions.
    pub layer: Rc<Layer>,
}

/// The options `request()` and `fetch()` share.
struct Common {
    cfg: CallConfig,
    idem: Option<String>,
    breaker_key: Option<String>,
    /// The call's own `retry.retryOn` (else its client's `UserFns` has one).
    retry_on: Option<JsValue>,
    /// The header names the call gives itself (lower case, one per line).
    own: String,
}

impl Builder {
    /// `baseUrl`, `headers` and the FetchInit defaults from the client's
    /// options.
    pub fn read(r: &Reader, cfg: ClientConfig, layer: Rc<Layer>) -> Result<Builder> {
        let base_url = match r.string("baseUrl")? {
            Some(b) => Some(read_base(&b, None)?),
            None => None,
        };
        let defaults = Fields::read(r)?;
        Builder::checked(base_url, static_headers(r)?, defaults, cfg, layer)
    }

    /// A derived client's (`extend`): its `baseUrl` joined under this
    /// one's, its headers and FetchInit fields over these.
    pub fn derive(&self, r: &Reader, cfg: ClientConfig, layer: Rc<Layer>) -> Result<Builder> {
        let base_url = match r.string("baseUrl")? {
            Some(b) => Some(read_base(&b, Some(&self.base))?),
            None => self.base.url().cloned(),
        };
        let mut headers = self.headers.clone();
        for (k, v) in static_headers(r)? {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
        let defaults = Fields::read(r)?.over(&self.defaults);
        Builder::checked(base_url, headers, defaults, cfg, layer)
    }

    fn checked(
        base_url: Option<JsValue>,
        headers: Vec<(String, Option<String>)>,
        defaults: Fields,
        cfg: ClientConfig,
        layer: Rc<Layer>,
    ) -> Result<Builder> {
        let somewhere = base_url.clone().unwrap_or_else(location_href).as_string();
        defaults.check(somewhere.as_deref().unwrap_or("http://localhost/"), "GET")?;
        Ok(Builder {
            base: Base::new(base_url, somewhere.as_deref()),
            headers,
            defaults,
            tag: uuid_v4().chars().take(8).collect(),
            cfg,
            layer,
        })
    }

    /// `request(url, options)` (and `schema()`'s, which `prefer_cache`s),
    /// its options read by `r` (which the caller reads its own with: each
    /// option is read once); with the call's own headers, read here.
    pub fn request(
        &self,
        engine: &Engine,
        url: &JsValue,
        r: &Reader,
        prefer_cache: bool,
    ) -> Result<(Built, OwnHeaders)> {
        let mut common = self.common(r)?;
        let signal = read_signal(r)?;
        let fields = Fields::read(r)?.over(&self.defaults);
        let method = call_options::method(r.string("method")?.as_deref())?;
        let response_type = ResponseType::parse(r.string("responseType")?.as_deref())?;
        let (mut href, mut parsed) = self.base.resolve(url)?;
        if let Some(q) = r.value("query")?.filter(|q| !q.is_null()) {
            let url = match parsed {
                Some(url) => url,
                None => parse_href(&href)?,
            };
            set_query(&url, &q)?;
            href = url.href();
            parsed = Some(url);
        }
        let call_headers = r.string_record("headers")?;
        for (k, _) in &call_headers {
            common.own.push_str(&k.to_ascii_lowercase());
            common.own.push('\n');
        }
        let has_headers =
            !(self.headers.is_empty() && call_headers.is_empty()) || common.idem.is_some();
        let body = r.value("body")?.filter(|b| !b.is_null());
        // Always built for a body (encode_body may set its type).
        let headers = if has_headers || body.is_some() {
            Some(self.headers(&call_headers)?)
        } else {
            None
        };
        let url = endpoint(href, parsed)?;
        fields.check(&url.0, &method)?;
        let target = target(&url.0, &method, headers, body, &fields)?;
        let mut call = self.call(
            engine,
            url,
            method,
            target,
            Mode::request(response_type),
            common,
        )?;
        call.spec.prefer_cache = prefer_cache;
        if self.cfg.dedupe && call.named_by_url() {
            let headers = call.target.headers().filter(|_| has_headers);
            let mut key = dedupe_key(&call, headers, response_type);
            fields.describe(&mut key);
            call.mode = Mode::Request {
                response_type,
                share: Some(key),
            };
        }
        Ok(((call, signal), call_headers))
    }

    /// The client's headers, then the call's (an undefined one removes
    /// the client's of that name).
    fn headers(&self, call_headers: &[(String, Option<String>)]) -> Result<Headers> {
        let headers = Headers::new().map_err(|_| OptionsError::new("headers", "unsupported"))?;
        for (k, v) in self.headers.iter().chain(call_headers) {
            match v {
                Some(v) => headers.set(k, v),
                None => headers.delete(k),
            }
            .map_err(|_| OptionsError::new("headers", "holds an invalid header name or value"))?;
        }
        Ok(headers)
    }

    /// `fetch(input, init)`. The Request constructor reads `input` and
    /// `init` (through [`InitView`]) and is the authority on them: what it
    /// refuses is refused as it threw, before anything is sent. A relative
    /// URL resolves against `baseUrl` when the client has one.
    pub fn fetch(
        &self,
        engine: &Engine,
        input: &JsValue,
        init: &JsValue,
    ) -> std::result::Result<Built, Refused> {
        // An init that is no dictionary (a string, a number): the constructor's TypeError.
        let dictionary = is_dictionary(init);
        if !(init.is_undefined() || init.is_null() || dictionary) {
            return Err(Refused::Host(
                new_request(input, init).err().unwrap_or_default(),
            ));
        }
        let r = Reader::dictionary(init, "init")?;
        let mut common = self.common(&r)?;
        let is_request = instance_of(input, Class::Request);
        let defaults = if is_request {
            Fields::default()
        } else {
            self.defaults.clone()
        };
        let view = (dictionary || !defaults.is_empty()).then(|| InitView::new(init, defaults));
        // A relative string joins under baseUrl as request()'s does; the
        // rest is the Request constructor's to read (against the page).
        let joined = match input.as_string() {
            Some(text) if !is_request => self.base.joined(&text),
            _ => None,
        };
        let source = joined
            .as_ref()
            .map_or_else(|| input.clone(), |(text, _)| JsValue::from_str(text));
        let plain = view
            .as_ref()
            .map_or(JsValue::UNDEFINED, |v| v.proxy.clone());
        let request = new_request(&source, &plain).map_err(Refused::Host)?;
        if let Some((_, under)) = joined {
            within(under, &request.url(), "url")?;
        }
        // The caller's signal: init's (null: none), else the input Request's.
        let signal = match view.as_ref().and_then(InitView::signal) {
            Some(given) => given,
            None if is_request => Some(input.unchecked_ref::<Request>().signal()),
            None => None,
        };
        let url = endpoint(request.url(), None)?;
        let headers = request.headers();
        // The (lower-case) names the call gave itself, one per line.
        common.own = header_lines(&headers, false);
        for (k, v) in &self.headers {
            if let (Some(v), false) = (v, headers.has(k).unwrap_or(true)) {
                let _ = headers.set(k, v);
            }
        }
        // fetch() upper-cases only the six standard methods; the breaker key
        // and retry.methods see 'patch' as 'PATCH' too.
        let method = request.method().to_ascii_uppercase();
        let target = fetch_target(request, view.as_ref(), is_request);
        let call = self.call(
            engine,
            url,
            method,
            target,
            Mode::Fetch {
                body_signal: signal.clone(),
            },
            common,
        )?;
        Ok((call, signal))
    }

    /// The origin of `baseUrl`, else of the page, when it is http(s): where
    /// the client's `auth` token goes (README, "auth").
    pub fn home(&self) -> Option<&str> {
        self.base.origin()
    }

    fn common(&self, r: &Reader) -> Result<Common> {
        let cfg = CallConfig::resolve_members(&self.cfg, &read_call(r)?)?;
        let idem = call_options::idempotency_key(read_idempotency_key(r)?)?.map(|k| match k {
            IdemKey::Random => uuid_v4(),
            IdemKey::Given(s) => s,
        });
        let breaker_key = r.string("breakerKey")?;
        Ok(Common {
            retry_on: r.retry_on(),
            cfg,
            idem,
            breaker_key,
            own: String::new(),
        })
    }

    /// The call for a built target (`url`: its href and endpoint): its
    /// Idempotency-Key header (the same on every attempt, over any a
    /// client's header function gives) and breaker key.
    fn call(
        &self,
        engine: &Engine,
        (href, endpoint): (String, String),
        method: String,
        target: Target,
        mode: Mode,
        mut common: Common,
    ) -> Result<Call> {
        let headers = target.headers();
        if let Some(k) = &common.idem {
            // The call's own header: a header function's key never replaces it.
            common.own.push_str("idempotency-key\n");
            // A no-cors Request drops the header without a word: a POST
            // must not then be retried as if it carried its key. (Headers
            // trims a value's outer spaces, the key's too.)
            let sent = headers.as_ref().is_some_and(|h| {
                h.set("Idempotency-Key", k).is_ok()
                    && h.get("Idempotency-Key").ok().flatten().as_deref()
                        == Some(k.trim_matches(' '))
            });
            if !sent {
                return Err(OptionsError::new(
                    "idempotencyKey",
                    "cannot be sent with this request (its headers are not writable)",
                ));
            }
        }
        // A key the caller set as a header counts as the call's key too, and
        // follows the option's rule. (Headers trims outer whitespace: all
        // spaces reads as empty.)
        let header_key = match (&common.idem, &headers) {
            (None, Some(h)) => h.get("Idempotency-Key").ok().flatten(),
            _ => None,
        };
        if let Some(k) = &header_key {
            header_idempotency_key("headers", k)?;
        }
        let has_key = common.idem.is_some() || header_key.is_some();
        // Outlives the call (breaker, holds, latencies): bounded.
        let breaker_key = key::bounded(
            common
                .breaker_key
                .unwrap_or_else(|| cat(&[&method, " ", &endpoint])),
        );
        let spec = Spec {
            key: breaker_key,
            method,
            has_key,
            cfg: common.cfg,
            prefer_cache: false,
            refusable: target.refusable(),
        };
        let request_id = cat(&[&self.tag, "-", &decimal(engine.next_id())]);
        let layer = self.layer.clone();
        let call = Call::new(request_id, href, spec, target, mode, layer, common.own);
        Ok(call.with_retry_on(common.retry_on))
    }
}

/// What every attempt of a `request()` sends, FetchInit fields included.
/// fetch() converts an init's headers through the iterator protocol, so a
/// call with none builds and passes none (and GET, the default method, as
/// such).
fn target(
    href: &str,
    method: &str,
    headers: Option<Headers>,
    body: Option<JsValue>,
    fields: &Fields,
) -> Result<Target> {
    let init = RequestInit::new();
    if method != "GET" {
        init.set_method(method);
    }
    fields.apply(&init);
    if let Some(h) = &headers {
        init.set_headers(h);
    }
    match (body, headers) {
        // Nothing to validate that the checks before have not: fetch(url, init).
        (None, headers) if fields.is_empty() => Ok(Target::Url {
            url: JsValue::from_str(href),
            init,
            headers,
        }),
        // A Request, whose headers follow its mode (no-cors refuses an
        // Idempotency-Key, which a bare init would drop without a word).
        (None, _) => Request::new_with_str_and_init(href, &init)
            .map(Target::request)
            .map_err(|_| OptionsError::new("headers", "cannot be sent with this request")),
        (Some(body), headers) => {
            // Always built for a body (encode_body may set its type).
            let headers = match headers {
                Some(h) => h,
                None => Headers::new().map_err(|_| OptionsError::new("headers", "unsupported"))?,
            };
            // A stream body needs duplex 'half' (the Request constructor
            // refuses it otherwise); each attempt sends a clone of it.
            let stream = is_stream(&body);
            if stream {
                let _ = js_sys::Reflect::set(&init, &"duplex".into(), &"half".into());
            }
            encode_body(&init, &body, &headers, stream)?;
            let request = Request::new_with_str_and_init(href, &init)
                .map_err(|_| OptionsError::new("body", "cannot be sent with this method"))?;
            Ok(Target::request(request))
        }
    }
}

/// What each attempt of a `fetch()` sends: the Request built from its
/// arguments, but a keepalive `fetch(url, init)` with a body goes out as
/// such: the host checks its keepalive quota on such a call (Firefox only
/// then), not on a Request. Not a stream body, which can be read once.
fn fetch_target(request: Request, view: Option<&InitView>, is_request: bool) -> Target {
    match view {
        Some(v)
            if !is_request
                && keepalive(&request)
                && v.given("body").is_some_and(|b| !is_stream(&b)) =>
        {
            let headers = request.headers();
            Target::Url {
                url: request.url().into(),
                init: v.replay(&headers),
                headers: Some(headers),
            }
        }
        _ => Target::request(request),
    }
}

fn keepalive(request: &Request) -> bool {
    js_sys::Reflect::get(request, &"keepalive".into()).is_ok_and(|k| k.is_truthy())
}

fn is_stream(v: &JsValue) -> bool {
    instance_of(v, Class::ReadableStream)
}

/// Calls are identical when method, absolute URL, headers and response
/// type all match. `Headers` iterates sorted, lower-cased names; `None`
/// stands for no headers at all.
fn dedupe_key(call: &Call, headers: Option<Headers>, rt: ResponseType) -> String {
    // The fragment is never sent: /x#a and /x are one request.
    let sent = call.url.split('#').next().unwrap_or(&call.url);
    // schema() does not wait where request() does: neither may inherit
    // the other's patience.
    let waits = if call.spec.prefer_cache {
        "cache"
    } else {
        "waits"
    };
    // One client's calls only: another's hooks and auth send other requests.
    let client = decimal(u64::from(call.layer().id()));
    let mut key = cat(&[
        &client,
        " ",
        &call.spec.method,
        " ",
        rt.name(),
        " ",
        waits,
        " ",
        sent,
    ]);
    if let Some(h) = headers {
        key.push_str(&header_lines(&h, true));
    }
    key
}

/// The client's `headers` when not a function (a function runs before
/// every attempt, in the wrapper's `UserFns`).
fn static_headers(r: &Reader) -> Result<Vec<(String, Option<String>)>> {
    let headers = match r.value("headers")? {
        Some(v) if !v.is_function() => r.record("headers", &v)?,
        _ => return Ok(Vec::new()),
    };
    check_headers(&headers, "headers")?;
    Ok(headers)
}

fn check_headers(headers: &[(String, Option<String>)], option: &str) -> Result<()> {
    let h = Headers::new().map_err(|_| OptionsError::new(option, "unsupported"))?;
    for (k, v) in headers {
        h.append(k, v.as_deref().unwrap_or_default())
            .map_err(|_| OptionsError::new(option, "holds an invalid header name or value"))?;
    }
    match h.get("Idempotency-Key").ok().flatten() {
        Some(key) => header_idempotency_key(option, &key),
        None => Ok(()),
    }
}

#[wasm_bindgen(module = "/src/web/request.js")]
extern "C" {
    /// `query` set on the URL (request.js), or what is wrong with it.
    #[wasm_bindgen(js_name = setQuery)]
    fn set_query_js(url: &Url, query: &JsValue) -> Query;
    /// The body set on `init` as sent (request.js), or what is wrong with it.
    #[wasm_bindgen(js_name = encodeBody)]
    fn encode_body_js(init: &RequestInit, body: &JsValue, headers: &Headers, stream: bool) -> Body;
    /// A `Headers`' fields as text (request.js): `\nname:value` each with
    /// `values`, else `name\n` each.
    #[wasm_bindgen(js_name = headerLines)]
    fn header_lines(headers: &Headers, values: bool) -> String;
}

/// What request.js's `setQuery` says of a `query` option (its words are
/// these names: a string enum, passed as its index).
#[wasm_bindgen]
#[derive(Clone, Copy)]
enum Query {
    Set = "set",
    NotObject = "not an object",
    Unreadable = "unreadable",
    /// Neither an object nor an iterable of [name, value] pairs.
    NotPairs = "not pairs",
    /// A number that is not finite.
    NotFinite = "not finite",
    /// A value that is no string, number or boolean.
    NotScalar = "not a scalar",
}

/// Sets each name of `query` on the URL, replacing any value the URL
/// already gives it (a call's own value wins, as with ofetch's `query`).
/// Only a call with a query re-serializes the URL's query string. Done in
/// JS (request.js): reading the pairs and writing them is plumbing that
/// measured 815 bytes gzip in wasm; what it refuses is said here.
fn set_query(url: &Url, query: &JsValue) -> Result<()> {
    if query.is_null() {
        return Ok(());
    }
    let reason = match set_query_js(url, query) {
        Query::Set => return Ok(()),
        Query::NotObject => "must be an object",
        Query::NotPairs => "must be an object or [name, value] pairs",
        // The policy core's words for a value of the wrong kind.
        Query::NotFinite => return query_value(Scalar::Number(f64::NAN)),
        Query::NotScalar => return query_value(Scalar::Other),
        _ => "could not be read",
    };
    Err(OptionsError::new("query", reason))
}

/// What request.js's `encodeBody` says of a body (its words are these
/// names: a string enum, passed as its index).
#[wasm_bindgen]
#[derive(Clone, Copy)]
enum Body {
    Set = "set",
    /// Its prototype could not be read.
    Unreadable = "unreadable",
    NotJson = "not JSON",
    /// A ReadableStream the host would send as its text.
    StreamAsText = "stream as text",
}

/// Plain objects and arrays go as JSON, every other BodyInit as it is,
/// set on `init` (request.js, which measured smaller than the same in wasm).
fn encode_body(init: &RequestInit, body: &JsValue, headers: &Headers, stream: bool) -> Result<()> {
    let reason = match encode_body_js(init, body, headers, stream) {
        Body::Set => return Ok(()),
        Body::Unreadable => "could not be read",
        // Firefox and Safari take a stream for a string.
        Body::StreamAsText => {
            "cannot be a ReadableStream here: this browser sends \"[object ReadableStream]\""
        }
        _ => "could not be encoded as JSON",
    };
    Err(OptionsError::new("body", reason))
}
