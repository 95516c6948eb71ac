//! Helpers shared by the test suites. Each suite uses a subset.
//! - [`browser`]: the browser suites' (`tests/browser.rs`, `tests/schema.rs`),
//!   reexported here.
//! - [`sim`]: the virtual-time harness of the policy simulations
//!   (`tests/sim.rs`, `tests/pagesim.rs`, `tests/pagesim_steady.rs`).
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

#[cfg(target_arch = "wasm32")]
mod browser;
// A simulation built for wasm (clippy's wasm pass) uses none of it.
#[cfg(target_arch = "wasm32")]
#[allow(unused_imports)]
pub use browser::*;

pub mod sim;
