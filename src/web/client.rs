//! The exported `Client`: options in, promises out. It validates and builds
//! each call (URL, headers, body, idempotency key, breaker key), links the
//! caller's signal, and hands the call to the engine.

use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortSignal, Headers, Request, RequestInit, Url};

use super::call::Call;
use super::call::{Mode, ResponseType, Target};
use super::cancel::Cancel;
use super::convert::{to_js, Obj};
use super::crosstab::CrossTab;
use super::engine::Engine;
use super::errors::CallError;
use super::host::{instance_of, location_href, now_ms, parse_url, prototype_of, uuid_v4};
use super::options::{
    idempotency_key_problem, pair_of, pairs, read_call, read_client, read_idempotency_key,
    read_signal, IdemKey, Reader,
};
use super::runtime::spawn_promise;
use super::schema;
use crate::policy::options::{CallConfig, ClientConfig, OptionsError};
use crate::text::{cat, decimal, split_http_href};

/// The storage prefix's default, which also names the cross-tab channel.
const DEFAULT_PREFIX: &str = "stormguard:";

const EVENTS: [&str; 8] = [
    "attempt", "retry", "timeout", "giveUp", "breaker", "fallback", "storage", "wait",
];

fn opt_err(option: &str, reason: &str) -> CallError {
    CallError::options(OptionsError {
        option: option.to_string(),
        reason: reason.to_string(),
    })
}

struct Common {
    cfg: CallConfig,
    signal: Option<AbortSignal>,
    idem: Option<String>,
    breaker_key: Option<String>,
}

/// A stormguard client. Construct through the package's `createClient`.
#[wasm_bindgen]
pub struct Client {
    engine: Rc<Engine>,
    /// `baseUrl` as a JS string, passed to `new URL` as it is.
    base_url: Option<JsValue>,
    headers: Vec<(String, String)>,
    tag: String,
    make_error: Option<js_sys::Function>,
}

fn to_class(make: &Option<js_sys::Function>, descriptor: JsValue) -> JsValue {
    match make {
        Some(f) => f
            .call1(&JsValue::UNDEFINED, &descriptor)
            .unwrap_or(descriptor),
        None => descriptor,
    }
}

#[wasm_bindgen]
impl Client {
    /// Validates `options`; throws an OptionsError descriptor if invalid.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Client, JsValue> {
        Client::build(&options).map_err(|e| e.to_js())
    }

    /// `client.request(url, options)`: resolves with the parsed body.
    pub fn request(&self, url: JsValue, options: JsValue) -> Promise {
        match self.prepare_request(&url, &options, false) {
            Ok((call, signal)) => self.spawn(call, signal),
            Err(e) => Promise::reject(&self.error(e.to_js())),
        }
    }

    /// `client.fetch(input, init)`: a drop-in for the global fetch.
    pub fn fetch(&self, input: JsValue, init: JsValue) -> Promise {
        match self.prepare_fetch(&input, &init) {
            Ok((call, signal)) => self.spawn(call, signal),
            Err(e) => Promise::reject(&self.error(e.to_js())),
        }
    }

    /// The package's wrapper hands in its descriptor-to-class function, so
    /// `request()` and `fetch()` reject with class instances and their
    /// promises reach the caller as they are, without a `then` per call.
    /// Without it (the Rust tests) they reject with descriptors.
    #[wasm_bindgen(js_name = setErrorFactory)]
    pub fn set_error_factory(&mut self, f: js_sys::Function) {
        self.make_error = Some(f);
    }

    /// `client.schema(url, options)`: request() plus a last-good copy.
    pub fn schema(&self, url: JsValue, options: JsValue) -> Promise {
        let prepared = self
            .prepare_request(&url, &options, true)
            .and_then(|(call, signal)| {
                let o = schema::read(&options, &call)?;
                Ok((call, signal, o))
            });
        match prepared {
            Ok((call, signal, o)) => {
                spawn_promise(schema::run(self.engine.clone(), call, signal, o))
            }
            Err(e) => Promise::reject(&e.to_js()),
        }
    }

    pub fn stats(&self) -> JsValue {
        let g = &self.engine.st.borrow().guard;
        // The counters as declared beside them; the gauges from the limiter.
        let o = Obj(to_js(&g.stats).unchecked_into());
        o.set("inFlight", g.in_flight())
            .set("queued", g.queued())
            .set("amplification", g.stats.amplification());
        o.into_js()
    }

    pub fn breakers(&self) -> Array {
        let snaps = self.engine.st.borrow_mut().guard.snapshot(now_ms());
        snaps.iter().map(to_js).collect()
    }

    /// Adds a listener; returns its id for `off`.
    pub fn on(&self, event: &str, listener: JsValue) -> Result<u32, JsValue> {
        if !EVENTS.contains(&event) {
            return Err(opt_err("event", "is not a known event name").to_js());
        }
        let func = listener
            .dyn_into::<js_sys::Function>()
            .map_err(|_| opt_err("listener", "must be a function").to_js())?;
        Ok(self.engine.on(event, func))
    }

    pub fn off(&self, id: u32) {
        self.engine.off(id);
    }

    /// Aborts in-flight calls and rejects queued ones; later calls reject.
    pub fn close(&self) {
        self.engine.close();
    }
}

impl Client {
    fn build(options: &JsValue) -> Result<Client, CallError> {
        let r = Reader::new(options, "options").map_err(CallError::options)?;
        let raw = read_client(&r).map_err(CallError::options)?;
        let cfg = ClientConfig::from_raw(&raw).map_err(CallError::options)?;
        let base_url = r.string("baseUrl").map_err(CallError::options)?;
        let base_url = match base_url {
            Some(b) => {
                let url = Url::new(&b).map_err(|_| opt_err("baseUrl", "is not an absolute URL"))?;
                if !url.username().is_empty() || !url.password().is_empty() {
                    return Err(opt_err("baseUrl", "must not contain credentials"));
                }
                Some(JsValue::from_str(&b))
            }
            None => None,
        };
        let headers = r.string_record("headers").map_err(CallError::options)?;
        check_headers(&headers, "headers")?;
        let tag = uuid_v4().chars().take(8).collect();
        let prefix = cfg
            .storage
            .as_ref()
            .map_or(DEFAULT_PREFIX, |s| s.prefix.as_str())
            .to_owned();
        let cross_tab = cfg.cross_tab;
        let engine = Engine::new(cfg);
        if cross_tab {
            let weak = Rc::downgrade(&engine);
            let on_peer = move |msg| {
                if let Some(engine) = weak.upgrade() {
                    engine.apply_peer(msg);
                }
            };
            if let Some(x) = CrossTab::new(&prefix, on_peer) {
                let _ = engine.crosstab.set(x);
            }
        }
        Ok(Client {
            engine,
            base_url,
            headers,
            tag,
            make_error: None,
        })
    }

    fn error(&self, descriptor: JsValue) -> JsValue {
        to_class(&self.make_error, descriptor)
    }

    fn spawn(&self, call: Call, signal: Option<AbortSignal>) -> Promise {
        let call = self.engine.clone().call(call, signal);
        let make = self.make_error.clone();
        spawn_promise(async move { call.await.map_err(|d| to_class(&make, d)) })
    }

    fn request_id(&self) -> String {
        let n = self.engine.next_id();
        cat(&[&self.tag, "-", &decimal(n)])
    }

    /// Resolves `input` (string or URL) against baseUrl or the page
    /// (`endpoint` then refuses userinfo).
    fn resolve_url(&self, input: &JsValue) -> Result<Url, CallError> {
        if !(input.is_string() || instance_of::<Url>(input)) {
            return Err(opt_err("url", "must be a string or a URL"));
        }
        let base = match &self.base_url {
            Some(b) => b.clone(),
            None => location_href(),
        };
        parse_url(input, &base).map_err(|_| opt_err("url", "is not a valid URL"))
    }

    /// The options `request()` and `fetch()` share.
    fn common(&self, r: &Reader) -> Result<Common, CallError> {
        let raw = read_call(r).map_err(CallError::options)?;
        let cfg = CallConfig::resolve(&self.engine.cfg, &raw).map_err(CallError::options)?;
        let signal = read_signal(r).map_err(CallError::options)?;
        let key = read_idempotency_key(r)
            .map_err(CallError::options)?
            .map(|k| match k {
                IdemKey::Random => uuid_v4(),
                IdemKey::Given(s) => s,
            });
        let breaker_key = r.string("breakerKey").map_err(CallError::options)?;
        Ok(Common {
            cfg,
            signal,
            idem: key,
            breaker_key,
        })
    }

    fn prepare_request(
        &self,
        url: &JsValue,
        options: &JsValue,
        prefer_cache: bool,
    ) -> Result<(Call, Option<AbortSignal>), CallError> {
        let r = Reader::new(options, "options").map_err(CallError::options)?;
        let common = self.common(&r)?;
        let method = match r.string("method").map_err(CallError::options)? {
            Some(m) => normalize_method(&m)?,
            None => "GET".to_string(),
        };
        let response_type = match r.string("responseType").map_err(CallError::options)? {
            None => ResponseType::Json,
            Some(s) => ResponseType::parse(&s)
                .ok_or_else(|| opt_err("responseType", "must be json, text, bytes or response"))?,
        };
        let url = self.resolve_url(url)?;
        if let Some(q) = r.value("query").map_err(CallError::options)? {
            set_query(&url, &q)?;
        }
        let call_headers = r.string_record("headers").map_err(CallError::options)?;
        let has_headers =
            !(self.headers.is_empty() && call_headers.is_empty()) || common.idem.is_some();
        let body = r.value("body").map_err(CallError::options)?;
        let body = body.filter(|b| !b.is_null());
        // fetch() converts an init's headers through the iterator protocol,
        // so a call with none builds and passes none (and GET, the default
        // method, as such).
        let init = RequestInit::new();
        if method != "GET" {
            init.set_method(&method);
        }
        let headers = if has_headers || body.is_some() {
            let headers = Headers::new().map_err(|_| opt_err("headers", "unsupported"))?;
            for (k, v) in self.headers.iter().chain(call_headers.iter()) {
                headers
                    .set(k, v)
                    .map_err(|_| opt_err("headers", "holds an invalid header name or value"))?;
            }
            init.set_headers(&headers);
            Some(headers)
        } else {
            None
        };
        let (href, endpoint) = endpoint(&url)?;
        let target = match (body, headers) {
            // Nothing to validate that the checks above have not: fetch(url, init).
            (None, headers) => Target::Url {
                url: JsValue::from_str(&href),
                init,
                headers,
            },
            (Some(body), headers) => {
                // Always built above for a body (encode_body may set its type).
                let headers = match headers {
                    Some(h) => h,
                    None => Headers::new().map_err(|_| opt_err("headers", "unsupported"))?,
                };
                // A stream body needs duplex 'half' (the Request constructor
                // refuses it otherwise); each attempt sends a clone of it.
                if instance_of::<web_sys::ReadableStream>(&body) {
                    let _ = js_sys::Reflect::set(&init, &"duplex".into(), &"half".into());
                }
                init.set_body(&encode_body(&body, &headers)?);
                let request = Request::new_with_str_and_init(&href, &init)
                    .map_err(|_| opt_err("body", "cannot be sent with this method"))?;
                Target::request(request)
            }
        };
        let (mut call, signal) = self.call(
            endpoint,
            href,
            method,
            target,
            Mode::Request(response_type),
            common,
        )?;
        call.prefer_cache = prefer_cache;
        if self.engine.cfg.dedupe && call.named_by_url() {
            let headers = call.target.headers().filter(|_| has_headers);
            call.dedupe_key = Some(dedupe_key(&call, headers, response_type));
        }
        Ok((call, signal))
    }

    fn prepare_fetch(
        &self,
        input: &JsValue,
        init: &JsValue,
    ) -> Result<(Call, Option<AbortSignal>), CallError> {
        let r = Reader::new(init, "init").map_err(CallError::options)?;
        let mut common = self.common(&r)?;
        // The Request sees the caller's init minus the signal: each attempt
        // gets its own, linked to the caller's. The Request constructor reads
        // `init` itself, member by member, through a Proxy whose `get` trap
        // is `Reflect.get(init, key)` (inherited members and getters, with
        // `init` as their receiver, as the host's fetch reads them) except
        // for `signal`. Never a copy: Object.assign or a spread would turn
        // an own `__proto__` key (what JSON.parse makes of one) into the
        // copy's prototype and smuggle its method, headers and body in, and
        // would drop inherited members. The Proxy's target is an empty
        // object, so a frozen `init` breaks no Proxy invariant.
        // The trap must outlive the Request constructor below.
        let view = init.is_object().then(|| init_view(init));
        let plain: JsValue = match &view {
            Some((proxy, _trap)) => proxy.clone(),
            None => js_sys::Object::new().into(),
        };
        let plain: RequestInit = plain.unchecked_into();
        // The URL is checked (credentials refused by name) before the
        // Request constructor, which would reject it with a vaguer error.
        let (request, (href, endpoint)) = if instance_of::<Request>(input) {
            let req: &Request = input.unchecked_ref();
            let parts = endpoint(&self.resolve_url(&req.url().into())?)?;
            let request = Request::new_with_request_and_init(req, &plain)
                .map_err(|_| opt_err("init", "was rejected by the Request constructor"))?;
            // A Request's own signal is the caller's unless init gives one.
            common.signal = common.signal.or_else(|| Some(req.signal()));
            (request, parts)
        } else {
            let parts = endpoint(&self.resolve_url(input)?)?;
            let request = Request::new_with_str_and_init(&parts.0, &plain)
                .map_err(|_| opt_err("init", "was rejected by the Request constructor"))?;
            (request, parts)
        };
        let headers = request.headers();
        for (k, v) in &self.headers {
            if !headers.has(k).unwrap_or(true) {
                let _ = headers.set(k, v);
            }
        }
        // fetch() upper-cases only the six standard methods; the breaker key
        // and retry.methods see 'patch' as 'PATCH' too.
        let method = request.method().to_ascii_uppercase();
        self.call(
            endpoint,
            href,
            method,
            Target::request(request),
            Mode::Fetch,
            common,
        )
    }

    /// The call for a built target: its Idempotency-Key header (the same
    /// on every attempt) and breaker key.
    fn call(
        &self,
        endpoint: String,
        href: String,
        method: String,
        target: Target,
        mode: Mode,
        common: Common,
    ) -> Result<(Call, Option<AbortSignal>), CallError> {
        let headers = target.headers();
        if let Some(k) = &common.idem {
            // A no-cors Request drops the header without a word: a POST
            // must not then be retried as if it carried its key.
            let sent = headers.as_ref().is_some_and(|h| {
                h.set("Idempotency-Key", k).is_ok()
                    && h.get("Idempotency-Key").ok().flatten().as_deref() == Some(k.as_str())
            });
            if !sent {
                return Err(opt_err(
                    "idempotencyKey",
                    "cannot be sent with this request (its headers are not writable)",
                ));
            }
        }
        // A key the caller set as a header counts as the call's key too, and
        // follows the option's rule: a blank one would make a POST
        // retryable with nothing for the server to deduplicate by. (Headers
        // trims outer whitespace: all spaces reads as empty.)
        let header_key = match (&common.idem, &headers) {
            (None, Some(h)) => h.get("Idempotency-Key").ok().flatten(),
            _ => None,
        };
        if let Some(problem) = header_key.as_deref().and_then(idempotency_key_problem) {
            return Err(opt_err("headers", &cat(&["its Idempotency-Key ", problem])));
        }
        let has_key = common.idem.is_some() || header_key.is_some();
        let breaker_key = common
            .breaker_key
            .unwrap_or_else(|| cat(&[&method, " ", &endpoint]));
        let call = Call {
            request_id: self.request_id(),
            method,
            url: href,
            target,
            mode,
            cfg: common.cfg,
            has_key,
            breaker_key,
            cancel: Cancel::default(),
            dedupe_key: None,
            prefer_cache: false,
            body_signal: match mode {
                Mode::Fetch => common.signal.clone(),
                Mode::Request(_) => None,
            },
        };
        Ok((call, common.signal))
    }
}

/// The trap that reads `init` for the Request constructor.
type InitTrap = Closure<dyn Fn(JsValue, JsValue) -> Result<JsValue, JsValue>>;

/// A Proxy over `init` whose every read is `Reflect.get(init, key)`, but
/// `signal` reads as undefined (see `prepare_fetch`).
fn init_view(init: &JsValue) -> (JsValue, InitTrap) {
    let signal_key = JsValue::from_str("signal");
    let source = init.clone();
    let trap = InitTrap::new(move |_target: JsValue, key: JsValue| {
        if key == signal_key {
            Ok(JsValue::UNDEFINED)
        } else {
            js_sys::Reflect::get(&source, &key)
        }
    });
    let handler = Obj::new();
    handler.set("get", trap.as_ref().clone());
    let proxy = js_sys::Proxy::new(&js_sys::Object::new(), &handler.0);
    (proxy.into(), trap)
}

/// Calls are identical when method, absolute URL, headers and response
/// type all match. `Headers` iterates sorted, lower-cased names; `None`
/// stands for no headers at all.
/// The URL's href and its endpoint (origin and path: what the default
/// breaker key is made of), refusing userinfo without echoing it. An
/// http(s) href is split in wasm rather than through four host getters.
fn endpoint(url: &Url) -> Result<(String, String), CallError> {
    let href = url.href();
    let (endpoint, credentials) = match split_http_href(&href) {
        Some(h) => (cat(&[h.origin, h.path]), h.credentials),
        None => (
            match url.origin() {
                // data: has nothing to key by but its payload: one key.
                _ if url.protocol() == "data:" => url.protocol(),
                // capacitor://, app://, file: have no origin either.
                o if o == "null" => cat(&[&url.protocol(), "//", &url.host(), &url.pathname()]),
                o => cat(&[&o, &url.pathname()]),
            },
            !url.username().is_empty() || !url.password().is_empty(),
        ),
    };
    if credentials {
        return Err(opt_err(
            "url",
            "must not contain credentials (user:password@)",
        ));
    }
    Ok((href, endpoint))
}

fn dedupe_key(call: &Call, headers: Option<Headers>, rt: ResponseType) -> String {
    // The fragment is never sent: /x#a and /x are one request.
    let sent = call.url.split('#').next().unwrap_or(&call.url);
    // schema() does not wait where request() does: neither may inherit
    // the other's patience.
    let waits = if call.prefer_cache { "cache" } else { "waits" };
    let mut key = cat(&[&call.method, " ", rt.name(), " ", waits, " ", sent]);
    if let Some(Ok(Some(entries))) = headers.map(|h| js_sys::try_iter(&h)) {
        for pair in entries.flatten() {
            let pair: Array = pair.unchecked_into();
            key.push('\n');
            key.push_str(&pair.get(0).as_string().unwrap_or_default());
            key.push(':');
            key.push_str(&pair.get(1).as_string().unwrap_or_default());
        }
    }
    key
}

fn check_headers(headers: &[(String, String)], option: &str) -> Result<(), CallError> {
    let h = Headers::new().map_err(|_| opt_err(option, "unsupported"))?;
    for (k, v) in headers {
        h.append(k, v)
            .map_err(|_| opt_err(option, "holds an invalid header name or value"))?;
    }
    let key = h.get("Idempotency-Key").ok().flatten();
    if let Some(problem) = key.as_deref().and_then(idempotency_key_problem) {
        return Err(opt_err(option, &cat(&["its Idempotency-Key ", problem])));
    }
    Ok(())
}

fn normalize_method(m: &str) -> Result<String, CallError> {
    let token = !m.is_empty()
        && m.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(opt_err("method", "is not an HTTP method token"));
    }
    let m = m.to_ascii_uppercase();
    // The methods fetch refuses to send.
    if matches!(m.as_str(), "CONNECT" | "TRACE" | "TRACK") {
        return Err(opt_err("method", "is a method fetch cannot send"));
    }
    Ok(m)
}

/// Sets each name of `query` on the URL, replacing any value the URL
/// already gives it (a call's own value wins, as with ofetch's `query`).
/// Only a call with a query re-serializes the URL's query string.
fn set_query(url: &Url, query: &JsValue) -> Result<(), CallError> {
    if query.is_null() {
        return Ok(());
    }
    if !query.is_object() || query.is_function() {
        return Err(opt_err("query", "must be an object"));
    }
    let params = url.search_params();
    let list = pairs(query).map_err(|_| opt_err("query", "could not be read"))?;
    // The URL's own values of each name go; then every pair is added, so
    // pairs that repeat a name (URLSearchParams, arrays) all go out.
    let mut named = Vec::new();
    for e in list.iter() {
        let Some((k, v)) = pair_of(&e) else {
            return Err(opt_err("query", "must be an object or [name, value] pairs"));
        };
        let k = k.as_string().unwrap_or_default();
        let text = if let Some(s) = v.as_string() {
            s
        } else if let Some(n) = v.as_f64() {
            if !n.is_finite() {
                return Err(opt_err("query", "numbers must be finite"));
            }
            js_sys::Number::from(n)
                .to_string_with_radix(10)
                .map(String::from)
                .unwrap_or_default()
        } else if let Some(b) = v.as_bool() {
            b.to_string()
        } else {
            return Err(opt_err(
                "query",
                "values must be strings, numbers or booleans",
            ));
        };
        named.push((k, text));
    }
    for (k, _) in &named {
        params.delete(k);
    }
    for (k, v) in &named {
        params.append(k, v);
    }
    Ok(())
}

/// Plain objects and arrays go as JSON; every other BodyInit as it is.
fn encode_body(body: &JsValue, headers: &Headers) -> Result<JsValue, CallError> {
    let plain = Array::is_array(body)
        || (body.is_object() && {
            match prototype_of(body) {
                Ok(proto) => {
                    proto.is_null()
                        || proto == prototype_of(&js_sys::Object::new()).unwrap_or_default()
                }
                Err(_) => return Err(opt_err("body", "could not be read")),
            }
        });
    if !plain {
        return Ok(body.clone());
    }
    let text = js_sys::JSON::stringify(body)
        .map_err(|_| opt_err("body", "could not be encoded as JSON"))?;
    if !headers.has("content-type").unwrap_or(false) {
        let _ = headers.set("content-type", "application/json");
    }
    Ok(text.into())
}
