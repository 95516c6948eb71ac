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
//!
//! The same crate built with the cargo feature `boot` is the boot build
//! (`boot.rs`, without `web`): it sends the first attempt of a call made
//! before the engine is in, which the engine then adopts
//! (`web/driver/adopt.rs`).
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
// The boot build uses none of it.
#[cfg_attr(all(target_arch = "wasm32", feature = "boot"), allow(dead_code))]
mod text;

#[cfg(all(target_arch = "wasm32", not(feature = "boot")))]
mod web;

#[cfg(all(target_arch = "wasm32", not(feature = "boot")))]
pub use web::Client;

/// The executor, gates and timers the client runs on: public for the
/// direct tests of their invariants (`tests/runtime.rs`), not an API.
#[cfg(all(target_arch = "wasm32", not(feature = "boot")))]
#[doc(hidden)]
pub use web::runtime;

#[cfg(all(target_arch = "wasm32", feature = "boot"))]
mod boot;
