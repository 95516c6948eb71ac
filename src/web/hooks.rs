//! A client's user functions as the engine calls them: the `UserFns`
//! object of the package's JS wrapper (`pkg-template/core.js`), which reads
//! and checks the hooks, auth, header functions and `retry.retryOn`, calls
//! them and the `validate` and `fetch` options the engine hands it (the one
//! place a user's function is called), and keeps the auth refresh shared
//! by a client and its derived clients.
//!
//! # Why in JS
//!
//! The functions, their arguments (a `Request`, a `Response`, an error
//! instance) and what they return all live there, and there the loops and
//! checks are small: written in Rust they added 7.7 KB gzip to the shipped
//! package, here 2.5 (0.8 of it in wasm; each measured by building without
//! it, issue 25).
//!
//! # Where, and what they may change
//!
//! What they may change is decided here and in the policy core, at fixed
//! points of the call driver: each attempt's Request, before its admission
//! (`driver/steps.rs`: the holds, quotas, dedupe and idempotency it is
//! judged by are those of the Request as the hooks left it), its Response
//! (`afterResponse`, `fetch.rs`), a retry (`beforeRetry` false:
//! `Guard::veto_retry`), the `retry.retryOn` predicate before an attempt is
//! settled (`Guard::asks_predicate`) and a 401 (`Guard::replay`, then the
//! shared refresh). Each promise is awaited within the attempt's time or
//! the deadline and until the call is aborted; one that rejects ends the
//! call with what it rejected with (an `OptionsError` naming `hooks`,
//! `headers` or `auth`, `cause` what the user's function threw).
//!
//! # The seam
//!
//! What the `UserFns` asks of the engine is [`UserFnFlag`]'s bits, exported to the
//! wrapper by name; each of its methods that runs hooks gets the attempt's
//! context as one object (`Call::context`). `tests/e2e/seam.test.mjs` checks
//! that the wrapper's `UserFns` has every method declared here and sets only the
//! bits exported.

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `UserFns` of `pkg-template/core.js`. Its methods are async functions:
    /// they return a promise and never throw. Each one that runs hooks
    /// gets the attempt's context as one object (`Call::context`:
    /// `{ requestId, attempt, method, url }`, made for that call of it),
    /// which its hooks are given as it is, or with the method's own
    /// members added (`beforeRetry`'s `error` and `delayMs`).
    pub type UserFns;
    /// What it asks of the engine: [`UserFnFlag`] bits, read once.
    #[wasm_bindgen(method, getter)]
    pub fn flags(this: &UserFns) -> u32;
    /// `{ request, seen }`: what one attempt sends, settled before its
    /// admission: `input` (and `init`) copied, with what the header
    /// functions and the token give (never over a header named in `own`;
    /// the token only to the auth's origins, by the context's `url`),
    /// through the beforeRequest hooks; `seen`: the token sent and the
    /// refreshes finished when it was read, opaque here (undefined: no
    /// token of the client's sent).
    #[wasm_bindgen(method)]
    pub fn prepare(
        this: &UserFns,
        input: &JsValue,
        init: &JsValue,
        own: &str,
        context: &JsValue,
    ) -> Promise;
    /// The Response to use (`afterResponse`); rejects with a TypeError
    /// (a network error) for a `Response.error()`, with an OptionsError
    /// for a hook that failed.
    #[wasm_bindgen(method)]
    pub fn after(
        this: &UserFns,
        request: &JsValue,
        response: &JsValue,
        context: &JsValue,
    ) -> Promise;
    /// `false`: a `beforeRetry` hook stops the retry.
    #[wasm_bindgen(method)]
    pub fn retry(this: &UserFns, error: &JsValue, delay_ms: f64, context: &JsValue) -> Promise;
    /// `retry.retryOn` (`f` the call's own, else undefined: the client's)
    /// on the error of a failed attempt a retry could follow: true, false
    /// or undefined; rejects with an OptionsError naming `retry.retryOn`
    /// when the function threw.
    #[wasm_bindgen(method, js_name = retryOn)]
    pub fn retry_on(this: &UserFns, f: &JsValue, error: &JsValue, context: &JsValue) -> Promise;
    /// After a 401 to an attempt whose token `read` described as `seen`:
    /// resolves when a refresh of that token has finished since it was
    /// read (at once if one has), rejects with what the refresh threw. A
    /// refresh this call starts is bounded by its `remaining_ms` (then
    /// forgotten, rejecting its waiters).
    #[wasm_bindgen(method)]
    pub fn refreshed(this: &UserFns, seen: &JsValue, remaining_ms: f64) -> Promise;
    /// `validate`'s function `f` on `value`, called on `on` (a Standard
    /// Schema's `~standard`, undefined for a predicate): its answer as it
    /// is, which `validate.rs` reads. Throws what `f` threw (the one method
    /// that answers at once: a predicate's verdict is not awaited).
    #[wasm_bindgen(method, catch)]
    pub fn validate(
        this: &UserFns,
        f: &Function,
        on: &JsValue,
        value: &JsValue,
    ) -> Result<JsValue, JsValue>;
    /// The `fetch` option `f` called with one attempt's `request`, a
    /// microtask from now (on a clean stack, as `host.js`'s `fetchLater`
    /// calls the global fetch): its promise (`transport.rs`).
    #[wasm_bindgen(method)]
    pub fn send(this: &UserFns, f: &Function, request: &JsValue) -> Promise;
}

/// What a client's `UserFns` asks of the engine, the bits of its `flags`.
/// Exported to the wrapper (the glue's `UserFnFlag`), which sets them by
/// these names: the one numbering both sides use.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum UserFnFlag {
    /// Each attempt sends a Request of its own (header functions, a token,
    /// beforeRequest or afterResponse hooks).
    PerAttempt = 1,
    /// `beforeRetry` hooks.
    BeforeRetry = 2,
    /// A 401 to an attempt that carried the token is replayed after a refresh.
    Refresh = 4,
    /// Attempts may carry credentials the call's own headers do not show.
    MayAuthorize = 8,
    /// The client has a `retry.retryOn` (a call's own needs none).
    RetryOn = 16,
}

/// [`UserFnFlag`]'s bits, for [`Layer::fns`](super::layer::Layer::fns).
pub mod flag {
    use super::UserFnFlag;

    pub const PER_ATTEMPT: u32 = UserFnFlag::PerAttempt as u32;
    pub const BEFORE_RETRY: u32 = UserFnFlag::BeforeRetry as u32;
    pub const REFRESH: u32 = UserFnFlag::Refresh as u32;
    pub const MAY_AUTHORIZE: u32 = UserFnFlag::MayAuthorize as u32;
    pub const RETRY_ON: u32 = UserFnFlag::RetryOn as u32;
}
