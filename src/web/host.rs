//! Bindings to the host's globals (never `window`, so workers and Node work)
//! and the two things the policy core asks of the outside: time and chance.
//!
//! What is smaller or cheaper written in JS is in `host.js`, which
//! wasm-bindgen bundles with its glue: calling fetch on a clean stack,
//! `instanceof` across realms, the realm-wide marks of attempts sent, a
//! host error's message without secrets. What crosses between the two by
//! name is a wasm-bindgen string enum here ([`Class`], [`Sent`]), never a
//! number each side keeps apart.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::get;
use crate::policy::clock::Clock;
use crate::policy::options::Host;

#[wasm_bindgen]
extern "C" {
    /// `globalThis`, which every host stormguard supports has (js-sys's
    /// `global()` also tries `self`, `window` and `global`: four imports).
    #[wasm_bindgen(thread_local_v2, js_name = globalThis)]
    static GLOBAL_THIS: js_sys::Object;

    /// The host's `navigator`, for its `onLine` flag.
    type Navigator;
    #[wasm_bindgen(method, getter, catch, js_name = onLine)]
    fn on_line(this: &Navigator) -> Result<JsValue, JsValue>;

    type Location;
    #[wasm_bindgen(method, getter)]
    fn href(this: &Location) -> JsValue;

    #[wasm_bindgen(js_name = URL)]
    type HostUrl;
    #[wasm_bindgen(constructor, catch, js_class = URL)]
    fn new(input: &JsValue, base: &JsValue) -> Result<HostUrl, JsValue>;

    #[wasm_bindgen(js_name = Request)]
    type HostRequest;
    #[wasm_bindgen(constructor, catch, js_class = Request)]
    fn new(input: &JsValue, init: &JsValue) -> Result<HostRequest, JsValue>;

    /// The global object, for reading its current `fetch` (a host or a
    /// test may have replaced it with anything, a throwing getter included).
    type Global;
    #[wasm_bindgen(method, getter, catch, js_name = fetch)]
    fn fetch_fn(this: &Global) -> Result<JsValue, JsValue>;

    /// A thenable of unknown make.
    type Thenable;
    #[wasm_bindgen(method, catch, js_name = then)]
    fn then_catch(this: &Thenable, ok: &JsValue, err: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_namespace = Promise, js_name = resolve, catch)]
    fn promise_resolve(v: &JsValue) -> Result<js_sys::Promise, JsValue>;

    /// `JSON.parse` on a JS string, without a copy through Rust.
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    pub fn json_parse(text: &js_sys::JsString) -> Result<JsValue, JsValue>;

    // User-supplied objects may be Proxies whose traps throw: every read of
    // one goes through a `catch` binding, so a throw becomes an Err here and
    // never unwinds through wasm frames.
    #[wasm_bindgen(js_namespace = Object, js_name = entries, catch)]
    pub fn entries(o: &JsValue) -> Result<js_sys::Array, JsValue>;

    #[wasm_bindgen(js_namespace = Object, js_name = assign, catch)]
    pub fn assign(target: &JsValue, source: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_namespace = Array, js_name = from, catch)]
    pub fn array_from(o: &JsValue) -> Result<js_sys::Array, JsValue>;

    /// The host's timer, which returns a number (browsers) or an object (Node).
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout(f: &js_sys::Function, ms: u32) -> JsValue;
    /// The same, passing `arg` to `f` (which host timer fired).
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout_with(f: &js_sys::Function, ms: u32, arg: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    pub fn clear_timeout(id: &JsValue);

    /// Read at every call (a stub installed later is what is read); a
    /// stub that throws reads as no number.
    #[wasm_bindgen(js_namespace = performance, js_name = now, catch)]
    fn performance_now() -> Result<f64, JsValue>;

    /// Chrome 116, Firefox 124, Safari 17.4, Node 20.3; absent in older hosts.
    #[wasm_bindgen(js_namespace = AbortSignal, js_name = any, catch)]
    fn abort_signal_any(signals: &js_sys::Array) -> Result<web_sys::AbortSignal, JsValue>;
}

/// A signal that aborts when either does (`AbortSignal.any`); `a` alone
/// where the host has no `AbortSignal.any`.
pub fn either_signal(a: &web_sys::AbortSignal, b: &web_sys::AbortSignal) -> web_sys::AbortSignal {
    abort_signal_any(&js_sys::Array::of2(a, b)).unwrap_or_else(|_| a.clone())
}

/// The host's current global `fetch` (a page, a worker and Node 20 all have
/// one; a test may have replaced it, or made it a getter that throws).
pub fn current_fetch() -> Result<JsValue, JsValue> {
    global().unchecked_ref::<Global>().fetch_fn()
}

/// `f(input, init)` called on the global object (`init` undefined: `f(input)`
/// alone), from a microtask rather than from inside wasm: Chromium spends
/// about 150 µs per call on a `fetch` whose caller's stack holds wasm frames
/// (measured with its CPU profiler, 2000 sequential calls: the native `fetch`
/// 476 µs a call from wasm, 330 µs from JS). The bound function runs on a
/// clean stack one microtask later, before any timer can fire; `init` is
/// read then, and the engine never changes it while an attempt is in flight.
pub fn fetch_later(
    f: Result<JsValue, JsValue>,
    input: &JsValue,
    init: &JsValue,
) -> js_sys::Promise {
    let f = match f {
        Ok(f) if f.is_function() => f,
        Ok(_) => return js_sys::Promise::reject(&js_sys::TypeError::new("fetch is not available")),
        Err(e) => return js_sys::Promise::reject(&e),
    };
    fetch_later_js(&f, input, init)
}

#[wasm_bindgen(module = "/src/web/host.js")]
extern "C" {
    /// `f(input, init)` one microtask from now (host.js: `Reflect.apply`
    /// as the page first had it, never `f`'s own `call` or `bind`).
    #[wasm_bindgen(js_name = fetchLater)]
    fn fetch_later_js(f: &JsValue, input: &JsValue, init: &JsValue) -> js_sys::Promise;
    /// `v instanceof` the global class named `class` (host.js).
    #[wasm_bindgen(js_name = isA)]
    fn is_a(v: &JsValue, class: Class) -> bool;
    /// The global setTimeout now (host.js).
    #[wasm_bindgen(js_name = timerNow)]
    pub fn timer_now() -> JsValue;
    /// Whether `f` is still the global setTimeout (host.js).
    #[wasm_bindgen(js_name = timerIs)]
    pub fn timer_is(f: &JsValue) -> bool;
    /// Marks an attempt's input and init as sent through the global fetch,
    /// in the one set of the realm that every client of every copy of the
    /// package shares (host.js).
    #[wasm_bindgen(js_name = markSent)]
    fn mark_sent_js(input: &JsValue, init: &JsValue);
    /// Whether `input` or `init` is an attempt's of any client of the realm,
    /// one that `who` passed on before, or neither (host.js).
    #[wasm_bindgen(js_name = wasSent)]
    fn was_sent_js(input: &JsValue, init: &JsValue, who: &JsValue) -> Sent;
    /// What the Request constructor threw, with no userinfo or header
    /// value in its message (host.js).
    #[wasm_bindgen(js_name = withoutSecrets)]
    fn without_secrets_js(e: &JsValue) -> JsValue;
}

/// Marks an attempt's `input` and `init` as sent through the global fetch,
/// for every client of the realm to know (host.js, `transport.rs`).
pub fn mark_sent(input: &JsValue, init: &JsValue) {
    mark_sent_js(input, init);
}

/// What host.js's `wasSent` says of a `fetch(input, init)` (its words are
/// these names: a string enum, passed as its index).
#[wasm_bindgen]
#[derive(Clone, Copy, PartialEq)]
pub enum Sent {
    /// Neither is an attempt's.
    No = "no",
    /// One is an attempt's, of any client of the realm: to pass on.
    PassOn = "pass on",
    /// One is an attempt that `who` (a client's own object) passed on
    /// before: its way to the network leads back to it.
    CameBack = "came back",
}

/// Whether `input` or `init` is an attempt's (see [`Sent`]).
pub fn was_sent(input: &JsValue, init: &JsValue, who: &JsValue) -> Sent {
    was_sent_js(input, init, who)
}

/// What the Request constructor threw for `fetch()`'s input, its message
/// without a URL's userinfo or a header value the host quoted (README,
/// "StormguardError": messages).
pub fn without_secrets(e: &JsValue) -> JsValue {
    without_secrets_js(e)
}

/// A promise for any value (`Promise.resolve`): what a stand-in's method
/// returned, promise or not; rejected if even that throws.
pub fn to_promise(v: &JsValue) -> js_sys::Promise {
    promise_resolve(v).unwrap_or_else(|e| js_sys::Promise::reject(&e))
}

/// Marks a promise we do not wait for (a stream's `cancel()`) as handled,
/// so its rejection is no unhandled rejection (fatal in Node).
pub fn quiet(p: &JsValue) {
    if p.is_object() {
        let _ = p
            .unchecked_ref::<Thenable>()
            .then_catch(&JsValue::UNDEFINED, realm().ignore.as_ref());
    }
}

thread_local! {
    static CLOCK: std::cell::Cell<Clock> = const { std::cell::Cell::new(Clock::new()) };
}

/// The clock, changed by `f`: what `f` gives.
fn clock(f: impl FnOnce(&mut Clock) -> f64) -> f64 {
    CLOCK.with(|cell| {
        let mut c = cell.get();
        let t = f(&mut c);
        cell.set(c);
        t
    })
}

/// Monotonic clock in milliseconds: the only clock the engine reads.
/// `performance.now()`, never stepping back, and moved on by fired timers
/// when it stands still (see `policy::clock`). Out of line: read in dozens
/// of places.
#[inline(never)]
pub fn now_ms() -> f64 {
    let host = performance_now().unwrap_or(f64::NAN);
    clock(|c| c.read(host))
}

/// A host timer set at `set_at` (by [`now_ms`]) for `due` has fired: the
/// time now, at least `due` when the host's clock stood still.
pub fn timer_fired(set_at: f64, due: f64) -> f64 {
    now_ms();
    clock(|c| c.timer_fired(set_at, due))
}

/// Wall clock, for Retry-After dates and cache ages.
pub fn epoch_ms() -> f64 {
    js_sys::Date::now()
}

/// The page's own address (a JS string), against which relative URLs
/// resolve; undefined where the host has none (Node). Read per call: a
/// single-page app moves it.
pub fn location_href() -> JsValue {
    realm()
        .location
        .as_ref()
        .map_or(JsValue::UNDEFINED, Location::href)
}

/// `new URL(input, base)`, kept as JS values: no string copied into wasm
/// and back. `base` may be undefined.
pub fn parse_url(input: &JsValue, base: &JsValue) -> Result<web_sys::Url, JsValue> {
    HostUrl::new(input, base).map(JsCast::unchecked_into)
}

/// `new Request(input, init)` for any input and init, as fetch() builds
/// one: whatever the constructor throws (a TypeError for a URL or an init
/// it refuses, a getter's own exception) comes back as it was thrown.
pub fn new_request(input: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue> {
    HostRequest::new(input, init).map(JsCast::unchecked_into)
}

/// Bytes from the host's CSPRNG (`crypto.getRandomValues`), drawn 256 at
/// a time so a call costs no host call for its randomness.
struct Pool {
    buf: [u8; 256],
    used: usize,
}

thread_local! {
    static POOL: std::cell::RefCell<Pool> = const {
        std::cell::RefCell::new(Pool { buf: [0; 256], used: 256 })
    };
}

fn random_bytes<const N: usize>() -> [u8; N] {
    const { assert!(N <= 256) };
    POOL.with_borrow_mut(|p| {
        let mut out = [0u8; N];
        if p.used + N > p.buf.len() {
            // getRandomValues does not fail for 256 bytes in any host we
            // support; if it ever did, Math.random still varies per client.
            if getrandom::fill(&mut p.buf).is_err() {
                for b in &mut p.buf {
                    *b = (js_sys::Math::random() * 256.0) as u8;
                }
            }
            p.used = 0;
        }
        if let Some(src) = p.buf.get(p.used..p.used + N) {
            out.copy_from_slice(src);
        }
        p.used += N;
        out
    })
}

/// Uniform in [0, 1) from crypto bytes, for jitter and probe sampling.
pub fn rand01() -> f64 {
    let x = u64::from_le_bytes(random_bytes::<8>());
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// A random UUID v4, for `idempotencyKey: true`.
pub fn uuid_v4() -> String {
    let mut b = random_bytes::<16>();
    if let Some(x) = b.get_mut(6) {
        *x = (*x & 0x0f) | 0x40;
    }
    if let Some(x) = b.get_mut(8) {
        *x = (*x & 0x3f) | 0x80;
    }
    let hex = |n: u8| char::from_digit(u32::from(n), 16).unwrap_or('0');
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(hex(byte >> 4));
        s.push(hex(byte & 0x0f));
    }
    s
}

/// The host classes [`instance_of`] tells apart, by their global names:
/// host.js gets the name (a string enum, passed as its index) and looks the
/// class up by it.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum Class {
    Request = "Request",
    Url = "URL",
    AbortSignal = "AbortSignal",
    ReadableStream = "ReadableStream",
    ArrayBuffer = "ArrayBuffer",
}

/// `v instanceof` the host's `class` as it is now; false instead of a throw
/// (a Proxy whose `getPrototypeOf` trap throws, a host without the class).
pub fn instance_of(v: &JsValue, class: Class) -> bool {
    is_a(v, class)
}

/// `navigator.onLine === false`: the host knows it has no network. A host
/// without the flag (Node) counts as online. The navigator is looked up
/// once: a `Reflect.get` on the global object per attempt crashed Node 20's
/// V8 (a deoptimizer fatal error) in the 100k-call test.
pub fn is_offline() -> bool {
    realm()
        .navigator
        .as_ref()
        .is_some_and(|n| n.on_line().ok().and_then(|v| v.as_bool()) == Some(false))
}

/// The global object.
pub fn global() -> js_sys::Object {
    GLOBAL_THIS.with(js_sys::Object::clone)
}

/// Which default set a client made here starts from (README, "Server
/// clients"): a page's where the host has a `window`, else a server's
/// (Node, Bun, Deno, Cloudflare Workers). Read at each `createClient`.
pub fn host() -> Host {
    match get(&global(), "window") {
        Ok(w) if w.is_object() => Host::Page,
        _ => Host::Server,
    }
}

/// The global object as an event target (window or worker scope), where it is one.
pub fn global_target() -> Option<web_sys::EventTarget> {
    let g = global();
    get(&g, "addEventListener")
        .ok()
        .filter(JsValue::is_function)
        .map(|_| g.unchecked_into())
}

/// A global object looked up once (`navigator`, `location`: each realm has
/// its own for good), if the host has it.
fn global_object<T: JsCast>(name: &'static str) -> Option<T> {
    get(&global(), name)
        .ok()
        .filter(JsValue::is_object)
        .map(JsCast::unchecked_into)
}

/// What this realm makes once and keeps (never dropped: a realm's globals,
/// a do-nothing callback, its id), reached one way
/// ([`realm`]): one lazy initialisation for all of them instead of one
/// `thread_local!` each, with its own access code per use (bench/README.md).
pub struct Realm {
    ignore: Closure<dyn FnMut(JsValue)>,
    navigator: Option<Navigator>,
    location: Option<Location>,
    /// This realm's id: cross-tab messages carrying it are our own
    /// clients' and ignored (`crosstab.rs`).
    pub id: String,
    /// The rate-limit fields a response announces a quota by, as JS
    /// strings (`fetch.rs`, `policy::ratelimit::announced_by`).
    pub announcing: js_sys::Array,
}

thread_local! {
    static REALM: &'static Realm = Box::leak(Box::new(Realm {
        ignore: Closure::new(|_: JsValue| {}),
        navigator: global_object("navigator"),
        location: global_object("location"),
        id: uuid_v4(),
        announcing: crate::policy::ratelimit::announced_by().map(JsValue::from_str).collect(),
    }));
}

/// This realm's [`Realm`], made at its first use.
pub fn realm() -> &'static Realm {
    REALM.with(|r| *r)
}
