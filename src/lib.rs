//! stormguard: a fetch wrapper for browsers that keeps a front end from
//! turning a slow or failing backend into an outage.
//!
//! The crate has two halves:
//!
//! * [`policy`] — pure state machines (backoff, classification, deadline,
//!   retry budget, breaker, limiter, stats). Time comes in as `f64`
//!   milliseconds and randomness as a number in `[0, 1)`, so every rule is
//!   proven by native `cargo test`, property tests and a virtual-time
//!   simulation.
//! * `web` (wasm32 only) — the thin boundary that drives the browser's
//!   `fetch` and `AbortController` and turns policy decisions into promises.
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod policy;
mod text;

#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(target_arch = "wasm32")]
pub use web::Client;

/// The executor, gates and timers the client runs on: public for the
/// direct tests of their invariants (`tests/runtime.rs`), not an API.
#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub use web::runtime;
