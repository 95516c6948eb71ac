//! Cross-tab coordination: the tabs of one origin (and storage prefix) act
//! as one client towards a failing backend.
//!
//! # Why
//!
//! Without it, ten open tabs are ten clients: each must see its own
//! failures before its breaker opens, each sends its own half-open probe,
//! each ignores the Retry-After another tab was given. Here a tab that
//! opens a breaker, closes it after a good probe, or is told to back off
//! by Retry-After says so on a `BroadcastChannel`, and the others follow.
//! Only one tab probes a half-open key: the probe holds a Web Lock
//! (`navigator.locks`, `ifAvailable`), or where there is none a short lease
//! in LocalStorage. A tab that finds another holding it waits for that
//! tab's news, looking at the lock again now and then (the half-open hold,
//! README, "breaker.halfOpenProbes"; `driver/admission.rs`).
//!
//! # Who talks to whom
//!
//! Clients in the same realm (one page running many clients, as the demo
//! and the benchmarks do) ignore each other's messages: they model separate
//! browsers, and a tab talks to other tabs, not to itself.
//!
//! # Hostile messages
//!
//! Messages and leases come from other scripts of the origin, any of which
//! may be hostile or broken: nothing they hold is copied into wasm memory
//! before its size is checked. A message whose key is longer than
//! [`MAX_PEER_KEY`] UTF-16 units, or that is malformed in any way, is
//! dropped; its open period and cooldown are cut to what this client would
//! set itself (`maxOpenMs`, `maxRetryAfterMs`: the breaker and the engine
//! do that). A cooldown carries the digest of the credentials of the calls
//! it binds (`s`, a whole number below 2^53, absent for calls without
//! any): a tab applies it to those calls only, and drops a message whose
//! `s` is anything else. A lease further ahead than [`LEASE_MS`] is not one this code
//! wrote (or the wall clock stepped back since): it is ignored and replaced.

use std::cell::{Cell, RefCell};

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{get, Obj};
use super::host::{epoch_ms, global, realm};
use crate::policy::credentials::Credentials;
use crate::text::cat;

/// The longest breaker key a message from another tab may carry (UTF-16 units).
const MAX_PEER_KEY: u32 = 2048;

/// How long a LocalStorage probe lease lasts; none longer is honoured.
const LEASE_MS: f64 = 30_000.0;

/// `v` as a Rust string if it is a JS string of at most `max` UTF-16 units;
/// a longer one is never copied out of JS.
fn bounded_string(v: &JsValue, max: u32) -> Option<String> {
    v.dyn_ref::<js_sys::JsString>()
        .filter(|s| s.length() <= max)
        .and_then(|s| s.as_string())
}

/// A message between tabs, in wall-clock time (tabs share no monotonic clock).
pub enum Peer {
    /// `key` opened until `until` (epoch ms) with open period `period`.
    Open {
        key: String,
        until: f64,
        period: f64,
    },
    /// A good probe closed `key`.
    Closed { key: String },
    /// Retry-After, or with `quota` a spent rate-limit quota: no attempt
    /// to `key` with credentials `who` before `until` (epoch ms). On the
    /// wire `who` is its digest (`s`, a number; absent without
    /// credentials), never a header's value.
    Cooldown {
        key: String,
        who: Credentials,
        until: f64,
        quota: bool,
    },
}

pub struct CrossTab {
    channel: JsValue,
    post: Function,
    _on_message: Closure<dyn FnMut(JsValue)>,
    lease_prefix: String,
}

impl CrossTab {
    /// Joins the channel of `prefix`; None where the host has no
    /// BroadcastChannel. Each valid message from another realm goes to
    /// `on_peer` (the engine's, which this module never reaches into).
    pub fn new(prefix: &str, on_peer: impl Fn(Peer) + 'static) -> Option<CrossTab> {
        let ctor: Function = get(&global(), "BroadcastChannel")
            .ok()
            .filter(JsValue::is_function)?
            .unchecked_into();
        let name = cat(&["stormguard-tabs:", prefix]);
        let channel =
            Reflect::construct(&ctor, &js_sys::Array::of1(&JsValue::from_str(&name))).ok()?;
        let post: Function = get(&channel, "postMessage").ok()?.dyn_into().ok()?;
        // Compared in JS (`===`): a sender's id is never copied in.
        let own = JsValue::from_str(&realm().id);
        let on_message = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let Ok(data) = get(&event, "data") else {
                return;
            };
            if get(&data, "r").is_ok_and(|r| r == own) {
                return;
            }
            if let Some(msg) = decode(&data) {
                on_peer(msg);
            }
        });
        let _ = Reflect::set(
            &channel,
            &JsValue::from_str("onmessage"),
            on_message.as_ref(),
        );
        // Node: a channel must not keep the process alive.
        if let Ok(unref) = get(&channel, "unref").and_then(|f| f.dyn_into::<Function>()) {
            let _ = unref.call0(&channel);
        }
        Some(CrossTab {
            channel,
            post,
            _on_message: on_message,
            lease_prefix: cat(&[prefix, "probe:"]),
        })
    }

    pub fn send(&self, msg: &Peer) {
        let key = match msg {
            Peer::Open { key, .. } | Peer::Closed { key } | Peer::Cooldown { key, .. } => key,
        };
        // The other tabs would drop it.
        if key.encode_utf16().count() > MAX_PEER_KEY as usize {
            return;
        }
        let o = Obj::new();
        o.set("r", realm().id.as_str());
        match msg {
            Peer::Open { key, until, period } => {
                o.set("t", "open")
                    .set("key", key.as_str())
                    .set("until", *until)
                    .set("period", *period);
            }
            Peer::Closed { key } => {
                o.set("t", "closed").set("key", key.as_str());
            }
            Peer::Cooldown {
                key,
                who,
                until,
                quota,
            } => {
                o.set("t", "cooldown")
                    .set("key", key.as_str())
                    .set("until", *until);
                if *quota {
                    o.set("q", true);
                }
                if let Some(s) = who.wire() {
                    o.set("s", s);
                }
            }
        }
        let _ = self.post.call1(&self.channel, &o.into_js());
    }

    pub fn close(&self) {
        if let Ok(close) = get(&self.channel, "close").and_then(|f| f.dyn_into::<Function>()) {
            let _ = close.call0(&self.channel);
        }
    }

    /// The right to send the one half-open probe for `key` across tabs;
    /// None when another tab holds it. Released when dropped.
    pub async fn probe_lock(&self, key: &str) -> Option<ProbeLock> {
        let locks = get(&global(), "navigator")
            .and_then(|n| get(&n, "locks"))
            .ok()
            .filter(JsValue::is_object);
        match locks {
            Some(locks) => web_lock(&locks, &cat(&[&self.lease_prefix, key])).await,
            None => lease(&cat(&[&self.lease_prefix, key])),
        }
    }
}

impl Drop for CrossTab {
    fn drop(&mut self) {
        self.close();
    }
}

/// A message from another tab, or None when it is not one this code sends:
/// not an object, an unknown type, a key that is not a string of at most
/// [`MAX_PEER_KEY`] units, a time that is not a finite number.
fn decode(data: &JsValue) -> Option<Peer> {
    if !data.is_object() {
        return None;
    }
    let text = |k: &'static str, max: u32| bounded_string(&get(data, k).ok()?, max);
    let num = |k: &'static str| {
        get(data, k)
            .ok()
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite())
    };
    let key = text("key", MAX_PEER_KEY)?;
    match text("t", 8)?.as_str() {
        "open" => Some(Peer::Open {
            key,
            until: num("until")?,
            period: num("period")?,
        }),
        "closed" => Some(Peer::Closed { key }),
        "cooldown" => Some(Peer::Cooldown {
            key,
            // Absent: a hold of the calls without credentials. Present, it
            // must be a digest this code writes.
            who: match get(data, "s").ok().filter(|s| !s.is_undefined()) {
                None => Credentials::NONE,
                Some(s) => Credentials::from_wire(s.as_f64()?)?,
            },
            until: num("until")?,
            quota: get(data, "q").is_ok_and(|q| q.is_truthy()),
        }),
        _ => None,
    }
}

/// Holds a cross-tab probe right until dropped.
pub struct ProbeLock {
    /// Resolves the promise the Web Lock callback returned: releases it.
    release: Option<Function>,
    /// The LocalStorage lease to remove.
    lease: Option<(JsValue, String)>,
}

impl Drop for ProbeLock {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.call0(&JsValue::NULL);
        }
        if let Some((storage, name)) = self.lease.take() {
            if let Ok(remove) = get(&storage, "removeItem").and_then(|f| f.dyn_into::<Function>()) {
                let _ = remove.call1(&storage, &JsValue::from_str(&name));
            }
        }
    }
}

/// `navigator.locks.request(name, { ifAvailable: true }, cb)`: granted when
/// `cb` gets a lock; it is held until the promise `cb` returned resolves.
/// Where the host refuses to coordinate (it throws, or rejects without
/// calling `cb`: an opaque origin, a lock name starting with `-`, a
/// document that is not fully active), the probe goes out unlocked, as
/// without Web Locks and storage.
async fn web_lock(locks: &JsValue, name: &str) -> Option<ProbeLock> {
    let unlocked = ProbeLock {
        release: None,
        lease: None,
    };
    let Some(request) = get(locks, "request")
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
    else {
        return Some(unlocked);
    };
    let release = Cell::new(None::<Function>);
    let hold = Promise::new(&mut |resolve, _| release.set(Some(resolve)));
    // Owned from here: if the caller stops waiting (its abort, its
    // deadline) this future is dropped, which resolves `hold`.
    let held = ProbeLock {
        release: release.take(),
        lease: None,
    };
    let granted_tx = Cell::new(None::<Function>);
    // Resolves with true (a lock), false (another tab holds it) or null
    // (the host refused).
    let granted = Promise::new(&mut |resolve, _| granted_tx.set(Some(resolve)));
    let granted_tx = granted_tx.take()?;
    let refused = granted_tx.bind1(&JsValue::NULL, &JsValue::NULL);
    // The callback may come late, or never: it finds this wait by its
    // ticket, which is gone once the wait is (the lock is then released).
    let ticket = Ticket::new(granted_tx, hold);
    let callback = ON_LOCK.with(|f| {
        f.as_ref()
            .unchecked_ref::<Function>()
            .bind1(&JsValue::NULL, &JsValue::from(ticket.0))
    });
    let options = Obj::new();
    options.set("ifAvailable", true);
    let args = js_sys::Array::of3(&JsValue::from_str(name), &options.into_js(), &callback);
    // Its own promise settles with the callback's (when released), or
    // rejects without calling it.
    let Ok(sent) = Reflect::apply(&request, locks, &args) else {
        return Some(unlocked);
    };
    if let Ok(then) = get(&sent, "then").and_then(|f| f.dyn_into::<Function>()) {
        let _ = then.call2(&sent, &JsValue::UNDEFINED, &refused);
    }
    match super::runtime::settle(granted).await.ok()?.as_bool() {
        Some(true) => Some(held),
        Some(false) => None,
        None => Some(unlocked),
    }
}

/// A probe waiting on `navigator.locks.request`: what its callback needs.
struct Waiting {
    ticket: u32,
    granted: Function,
    hold: Promise,
}

thread_local! {
    static WAITING: RefCell<(u32, Vec<Waiting>)> = const { RefCell::new((0, Vec::new())) };
    /// The one lock callback, bound to a ticket per request: nothing is
    /// created per probe that a late (or missing) callback could outlive.
    static ON_LOCK: Closure<dyn FnMut(u32, JsValue) -> JsValue> = Closure::new(on_lock);
}

/// A wait's place in `WAITING`, given up when dropped.
struct Ticket(u32);

impl Ticket {
    fn new(granted: Function, hold: Promise) -> Ticket {
        WAITING.with_borrow_mut(|(next, list)| {
            *next = next.wrapping_add(1);
            list.push(Waiting {
                ticket: *next,
                granted,
                hold,
            });
            Ticket(*next)
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        WAITING.with_borrow_mut(|(_, list)| list.retain(|w| w.ticket != self.0));
    }
}

/// The Web Lock callback: `lock` is null when another tab holds it. The
/// lock is held until the promise returned resolves; for a wait that is
/// gone, nothing is returned, so a lock granted late is released at once.
fn on_lock(ticket: u32, lock: JsValue) -> JsValue {
    let waiting = WAITING.with_borrow_mut(|(_, list)| {
        let i = list.iter().position(|w| w.ticket == ticket)?;
        Some(list.swap_remove(i))
    });
    let Some(w) = waiting else {
        return JsValue::UNDEFINED;
    };
    let _ = w
        .granted
        .call1(&JsValue::NULL, &JsValue::from_bool(!lock.is_null()));
    if lock.is_null() {
        JsValue::UNDEFINED
    } else {
        w.hold.into()
    }
}

/// Fallback without Web Locks: a 30 s lease in LocalStorage. Not atomic
/// across tabs, but it keeps the probe to one tab in all but a race. Only a
/// lease ending within [`LEASE_MS`] from now holds: one further ahead (a
/// forged entry, or one written before the wall clock stepped back) would
/// keep the breaker half-open forever, so it is overwritten.
fn lease(name: &str) -> Option<ProbeLock> {
    let storage = get(&global(), "localStorage")
        .ok()
        .filter(JsValue::is_object);
    let Some(storage) = storage else {
        // Nothing to coordinate with: probe.
        return Some(ProbeLock {
            release: None,
            lease: None,
        });
    };
    let call = |method: &'static str, args: &[&JsValue]| -> Option<JsValue> {
        let f: Function = get(&storage, method).ok()?.dyn_into().ok()?;
        Reflect::apply(
            &f,
            &storage,
            &args.iter().copied().collect::<js_sys::Array>(),
        )
        .ok()
    };
    let now = epoch_ms();
    // A time in ms is about 13 digits: a longer value is no lease of ours.
    let held = call("getItem", &[&JsValue::from_str(name)])
        .and_then(|v| bounded_string(&v, 32))
        .map(|v| js_sys::Number::parse_float(&v))
        .is_some_and(|until| until > now && until <= now + LEASE_MS);
    if held {
        return None;
    }
    let until = JsValue::from_f64(now + LEASE_MS);
    // Storage that refuses the write (full, disabled) coordinates nothing:
    // the probe goes out, as without storage (not "another tab holds it",
    // which would hold every call of the key until its deadline).
    if call("setItem", &[&JsValue::from_str(name), &until]).is_none() {
        return Some(ProbeLock {
            release: None,
            lease: None,
        });
    }
    Some(ProbeLock {
        release: None,
        lease: Some((storage.clone(), name.to_owned())),
    })
}
