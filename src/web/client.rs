//! The exported `Client`: options in, promises out. Each call is built by
//! [`super::request::Builder`] (URL, headers, body, idempotency and breaker
//! keys) and handed, with the caller's signal, to the engine.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::call::{Adopted, AdoptedEnd, Call};
use super::cancel::CancelReason;
use super::convert::to_js;
use super::crosstab::CrossTab;
use super::driver;
use super::engine::Engine;
use super::errors::CallError;
use super::hooks::{flag, UserFns};
use super::host::{host, now_ms, without_secrets};
use super::layer::Layer;
use super::options::{read_client, Reader};
use super::request::{Builder, Built, Refused};
use super::runtime::{spawn, spawn_promise, Apart, CallersContext, OnAbort};
use super::schema;
use super::transport::Transport;
use super::validate::{self, Check};
use crate::policy::options::{ClientConfig, OptionsError};
use crate::policy::stats::Stats;

/// The storage prefix's default, which also names the cross-tab channel.
const DEFAULT_PREFIX: &str = "stormguard:";

const EVENTS: [&str; 8] = [
    "attempt", "retry", "timeout", "giveUp", "breaker", "fallback", "storage", "wait",
];

/// A stormguard client. Construct through the package's `createClient`.
#[wasm_bindgen]
pub struct Client {
    engine: Rc<Engine>,
    builder: Builder,
    make_error: Option<js_sys::Function>,
    /// The first attempt of the next call, sent by the boot build before
    /// the engine was in (`Client::adopt`).
    adopted: Cell<Option<Adopted>>,
}

/// The error a descriptor stands for: its class instance, or for
/// `fetch()` (`native`) the error the host's fetch would give.
fn to_class(make: &Option<js_sys::Function>, descriptor: JsValue, native: bool) -> JsValue {
    match make {
        Some(f) => f
            .call2(
                &JsValue::UNDEFINED,
                &descriptor,
                &JsValue::from_bool(native),
            )
            .unwrap_or(descriptor),
        None => descriptor,
    }
}

/// An invalid option as the descriptor JS sees.
fn options_error(e: OptionsError) -> JsValue {
    CallError::from(e).to_js()
}

#[wasm_bindgen]
impl Client {
    /// Validates `options`; throws an OptionsError descriptor if invalid.
    /// `original`: the global fetch when the client was created, if that
    /// was before the module was in (`createClientSync`), else undefined
    /// (read now). An attempt that comes back to the client goes there, not
    /// to the global fetch of now (the client itself, once installed).
    #[wasm_bindgen(constructor)]
    pub fn created_over(options: JsValue, original: JsValue) -> Result<Client, JsValue> {
        let original = (!original.is_undefined()).then_some(original);
        Client::build(&options, original).map_err(options_error)
    }

    /// The next call's first attempt (`request()`'s; `fetch()` and
    /// `schema()` take one that is `Unsent`) went out at `started_ms`
    /// (`performance.now()`) before the engine was in, sent by the boot
    /// build (pkg-template/boot.js), and ended so: `kind` 0 a 2xx it
    /// delivered, 1 an answer (`value` its Response, body unread), 2 a
    /// 2xx whose body did not parse (`value` the error), 3 a network error
    /// (`value` the host's), 4 its time ran out, 5 the caller aborted it
    /// (the call, made again with its aborted signal, ends so and is
    /// counted as the engine counts an aborted call), 6 none went (the
    /// call was made at `started_ms`, and aborted or `late` before the
    /// engine was in: it ends so, no hook run). The call adopts it as its
    /// first attempt. `late`: the call's deadline passed before the engine was
    /// in; the call ends with it, counted as one that ran out of time in
    /// the engine's hands, with nothing more sent.
    pub fn adopt(&self, started_ms: f64, kind: u8, value: JsValue, late: bool) {
        let end = match kind {
            0 => AdoptedEnd::Delivered,
            1 => AdoptedEnd::Answer(value),
            2 => AdoptedEnd::Parse(value),
            3 => AdoptedEnd::Network(value),
            4 => AdoptedEnd::Timeout,
            5 => AdoptedEnd::Cancelled,
            _ => AdoptedEnd::Unsent,
        };
        self.adopted.set(Some(Adopted {
            started_ms,
            end,
            late,
        }));
    }

    /// `n` (> 0) first attempts the boot build sent before the engine was
    /// in are still in flight: each holds a concurrency slot, as the
    /// engine's own attempts do, until it ends (`n` <= 0: one ended, its
    /// slot freed for the next queued call).
    pub fn booting(&self, n: i32) {
        match u32::try_from(n) {
            Ok(n) if n > 0 => self.engine.hold_slots(n),
            _ => self.engine.release_slot(),
        }
    }

    /// `client.request(url, options)`: resolves with the parsed body.
    pub fn request(&self, url: JsValue, options: JsValue) -> Promise {
        let adopted = self.adopted.take();
        // One reader: each option read once (request.rs, then `validate`).
        let built = Reader::new(&options, "options").and_then(|r| {
            let ((mut call, signal), _) = self.builder.request(&self.engine, &url, &r, false)?;
            call.adopt(adopted);
            let check = validate::read(&r)?.map(|v| Check::new(v, &call, signal.as_ref()));
            Ok(((call, signal), check))
        });
        match built {
            Ok((built, check)) => self.spawn(Ok(built), check, false),
            Err(e) => self.spawn(Err(e), None, false),
        }
    }

    /// `client.fetch(input, init)`: a drop-in for the global fetch, which
    /// rejects as it does. An attempt of this client's (or another's) that
    /// comes back here, the client being installed as the global fetch,
    /// goes to the network instead (see `transport.rs`).
    pub fn fetch(&self, input: JsValue, init: JsValue) -> Promise {
        // Taken first: an attempt passed on below is no call of this
        // client's, and the next call must not adopt what was meant for it.
        let adopted = self.adopted.take();
        let layer = &self.builder.layer;
        let transport = layer.transport().unwrap_or(self.engine.transport());
        if let Some(sent) = transport.returned(&input, &init) {
            return sent;
        }
        match self.builder.fetch(&self.engine, &input, &init) {
            Ok(mut built) => {
                built.0.adopt(adopted);
                self.spawn(Ok(built), None, true)
            }
            Err(Refused::Host(e)) => Promise::reject(&without_secrets(&e)),
            Err(Refused::Options(e)) => {
                Promise::reject(&to_class(&self.make_error, options_error(e), true))
            }
        }
    }

    /// The package's wrapper hands in its descriptor-to-class function
    /// (`(descriptor, native) => error`), so `request()` and `fetch()`
    /// reject with class instances (for `fetch()`, the host's own errors)
    /// and their promises reach the caller as they are, without a `then`
    /// per call. Without it (the Rust tests) they reject with descriptors.
    #[wasm_bindgen(js_name = setErrorFactory)]
    pub fn set_error_factory(&mut self, f: js_sys::Function) {
        self.make_error = Some(f);
    }

    /// The origin of `baseUrl`, else of the page, when it is http(s): where
    /// the wrapper's `UserFns` lets the `auth` token go, besides `auth.origins`.
    pub fn home(&self) -> Option<String> {
        self.builder.home().map(str::to_owned)
    }

    /// The package's wrapper hands in the client's hooks, auth and header
    /// functions (its `UserFns`), when it has any, before any call.
    #[wasm_bindgen(js_name = setUserFns)]
    pub fn set_user_fns(&self, fns: UserFns) {
        self.builder.layer.set_user_fns(fns);
    }

    /// `client.extend(options)`: a client with `options` over this one's
    /// that shares its engine (breakers, budget, slots, holds, cross-tab
    /// link, last-good cache); `fns` its functions (the wrapper's, made from
    /// `options` over this client's). Throws an OptionsError descriptor.
    pub fn extend(&self, options: JsValue, fns: Option<UserFns>) -> Result<Client, JsValue> {
        let derive = || -> Result<Builder, OptionsError> {
            let r = Reader::new(&options, "options")?;
            if r.value("wasm")?.is_some() {
                return Err(OptionsError::new(
                    "wasm",
                    "cannot be changed in extend(): a derived client shares its parent's module",
                ));
            }
            let cfg = self.builder.cfg.extend_members(&read_client(&r)?)?;
            // Its own `fetch` option, else its parent's transport.
            let transport = Transport::option(&r)?
                .map(|f| Transport::new(Some(f), Some(self.engine.transport())));
            let layer = Layer::new(Some(self.builder.layer.clone()), transport);
            if let Some(fns) = fns {
                layer.set_user_fns(fns);
            }
            self.builder.derive(&r, cfg, layer)
        };
        Ok(Client {
            engine: self.engine.clone(),
            builder: derive().map_err(options_error)?,
            make_error: self.make_error.clone(),
            adopted: Cell::new(None),
        })
    }

    /// `client.schema(url, options)`: request() plus a last-good copy.
    pub fn schema(&self, url: JsValue, options: JsValue) -> Promise {
        // One reader: each option read once (request.rs, then schema.rs's).
        let adopted = self.adopted.take();
        let prepared = Reader::new(&options, "options").and_then(|r| {
            let ((mut call, signal), own) = self.builder.request(&self.engine, &url, &r, true)?;
            call.adopt(adopted);
            let o = schema::read(&r, &call, &own)?;
            Ok((call, signal, o))
        });
        match prepared {
            Ok((call, signal, o)) => {
                let users = self.runs_user_functions(&call, o.validates());
                let _context = CallersContext::keep(users);
                spawn_promise(schema::run(self.engine.clone(), call, signal, o))
            }
            Err(e) => Promise::reject(&options_error(e)),
        }
    }

    pub fn stats(&self) -> JsValue {
        let g = self.engine.guard();
        to_js(&StatsOut::new(&g.stats, g.in_flight(), g.queued()))
    }

    pub fn breakers(&self) -> Array {
        // A closed root freed its breakers for its own `breakers()` (the
        // glue answers `[]`); its derived clients answer the same.
        if self.engine.is_closed() {
            return Array::new();
        }
        let snaps = self.engine.breakers(now_ms());
        snaps.iter().map(to_js).collect()
    }

    /// Adds a listener; returns its id for `off`.
    pub fn on(&self, event: JsValue, listener: JsValue) -> Result<u32, JsValue> {
        // Any value: a number or an object passed as a &str would be read
        // by the glue as a string, and trap the module.
        let event = event.as_string().filter(|e| EVENTS.contains(&e.as_str()));
        let Some(event) = event else {
            return Err(options_error(OptionsError::new(
                "event",
                "is not a known event name",
            )));
        };
        let func = listener
            .dyn_into::<js_sys::Function>()
            .map_err(|_| options_error(OptionsError::new("listener", "must be a function")))?;
        let id = self.engine.events().on(&event, func);
        self.builder.layer.listening(id);
        Ok(id)
    }

    pub fn off(&self, id: u32) {
        self.engine.events().off(id);
        self.builder.layer.unlisten(id);
    }

    /// Aborts in-flight calls and rejects queued ones; later calls reject.
    /// A derived client's: its calls and those of the clients derived from
    /// it; the root's: every call of the engine.
    pub fn close(&self) {
        if self.builder.layer.is_root() {
            self.engine.close();
        } else {
            self.engine.close_layer(&self.builder.layer);
        }
    }
}

impl Client {
    /// `new Client(options)`: the global fetch read now.
    pub fn new(options: JsValue) -> Result<Client, JsValue> {
        Client::created_over(options, JsValue::UNDEFINED)
    }

    fn build(options: &JsValue, original: Option<JsValue>) -> Result<Client, OptionsError> {
        let r = Reader::new(options, "options")?;
        let mut transport = Transport::new(Transport::option(&r)?, None);
        if let Some(original) = original {
            transport.created_over(original);
        }
        let cfg = ClientConfig::from_members(&read_client(&r)?, host())?;
        let builder = Builder::read(&r, cfg.clone(), Layer::new(None, None))?;
        let prefix = cfg
            .storage
            .as_ref()
            .map_or(DEFAULT_PREFIX, |s| s.prefix.as_str())
            .to_owned();
        let cross_tab = cfg.cross_tab;
        let engine = Engine::new(cfg, transport);
        if cross_tab {
            let weak = Rc::downgrade(&engine);
            let on_peer = move |msg| {
                if let Some(engine) = weak.upgrade() {
                    engine.apply_peer(msg);
                }
            };
            if let Some(x) = CrossTab::new(&prefix, on_peer) {
                engine.set_crosstab(x);
            }
        }
        Ok(Client {
            engine,
            builder,
            make_error: None,
            adopted: Cell::new(None),
        })
    }

    /// Runs a built call, its value checked by `check` (`validate`);
    /// rejects with the error's class instance, or for
    /// `fetch()` (`native`) with the host's own error for it. A fetch()
    /// caller's abort rejects the promise with the signal's reason in the
    /// abort itself, as the host's fetch does (an already aborted signal:
    /// a promise already rejected), and the engine then ends the call.
    fn spawn(
        &self,
        built: Result<Built, OptionsError>,
        check: Option<Check>,
        native: bool,
    ) -> Promise {
        let make = self.make_error.clone();
        let mut check = check;
        let mut built = match built {
            Ok(b) => Some(b),
            Err(e) => return Promise::reject(&to_class(&make, options_error(e), native)),
        };
        let engine = self.engine.clone();
        let users = built
            .as_ref()
            .is_some_and(|(call, _)| self.runs_user_functions(call, check.is_some()));
        let _context = CallersContext::keep(users);
        Promise::new(&mut |resolve, reject| {
            let Some((call, signal)) = built.take() else {
                return;
            };
            let cancel = call.cancel.clone();
            let (on_abort, early) = (cancel.clone(), reject.clone());
            let (link, signal) = match signal {
                Some(s) if native => {
                    let link = OnAbort::new(&s, move |why| {
                        on_abort.cancel(CancelReason::Caller(why.clone()));
                        let _ = early.call1(&JsValue::UNDEFINED, &why);
                    });
                    (link, None)
                }
                signal => (None, signal),
            };
            let run = driver::call(engine.clone(), call, signal);
            let make = make.clone();
            let (check, engine) = (check.take(), engine.clone());
            spawn(async move {
                let out = match (run.await, check) {
                    (Ok(v), Some(c)) => Apart(c.check(&engine, v)).await.map_err(|e| {
                        engine.failed();
                        e.to_js()
                    }),
                    (done, _) => done,
                };
                drop(link);
                let (settle, value) = match out {
                    Ok(v) => (resolve, v),
                    // fetch(): rejected already, with the reason itself.
                    Err(_)
                        if native && matches!(cancel.reason(), Some(CancelReason::Caller(_))) =>
                    {
                        return
                    }
                    Err(d) => (reject, to_class(&make, d, native)),
                };
                let _ = settle.call1(&JsValue::UNDEFINED, &value);
            });
        })
    }

    /// `call` runs the user's functions (a token, headers, hooks, a
    /// `retry.retryOn`, `validate`, the `fetch` option): it runs in its
    /// caller's async context ([`CallersContext`]), so each of them reads
    /// that call's (Node's AsyncLocalStorage), not another's.
    fn runs_user_functions(&self, call: &Call, validates: bool) -> bool {
        let layer = &self.builder.layer;
        validates
            || call.retry_on().is_some()
            || layer.fns(flag::PER_ATTEMPT | flag::BEFORE_RETRY).is_some()
            || layer
                .transport()
                .unwrap_or(self.engine.transport())
                .calls_user()
    }
}

/// `client.stats()`, the JS `Stats` field for field: the counters, then
/// the gauges from the limiter. Every number an f64, as JS has it (a
/// counter is exact below 2^53, which none reaches; `convert::Plain`
/// writes no u64), so one serializer serves them all.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsOut {
    requests: f64,
    attempts: f64,
    retries: f64,
    timeouts: f64,
    failures: f64,
    breaker_opens: f64,
    budget_denied: f64,
    queue_rejected: f64,
    deduped: f64,
    fallbacks: f64,
    in_flight: f64,
    queued: f64,
    amplification: f64,
}

impl StatsOut {
    fn new(stats: &Stats, in_flight: u32, queued: u32) -> StatsOut {
        // Every counter by name: one added to `Stats` does not compile
        // until it is written here too.
        let Stats {
            requests,
            attempts,
            retries,
            timeouts,
            failures,
            breaker_opens,
            budget_denied,
            queue_rejected,
            deduped,
            fallbacks,
        } = stats;
        let n = |c: &u64| *c as f64;
        StatsOut {
            requests: n(requests),
            attempts: n(attempts),
            retries: n(retries),
            timeouts: n(timeouts),
            failures: n(failures),
            breaker_opens: n(breaker_opens),
            budget_denied: n(budget_denied),
            queue_rejected: n(queue_rejected),
            deduped: n(deduped),
            fallbacks: n(fallbacks),
            in_flight: f64::from(in_flight),
            queued: f64::from(queued),
            amplification: stats.amplification(),
        }
    }
}
