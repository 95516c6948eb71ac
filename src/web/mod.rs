//! The thin boundary between the policy core and the JavaScript host.
//!
//! Everything that touches a `JsValue` lives here; every decision is made by
//! [`crate::policy`]. The host is any realm with a global `fetch`,
//! `AbortController` and `performance.now()`: a page, a Web Worker or
//! Node >= 20. That is why nothing here goes through `window`.

mod call;
mod cancel;
mod client;
mod convert;
mod crosstab;
mod dedupe;
mod driver;
mod engine;
mod errors;
mod events;
mod fetch;
mod fetch_init;
mod hooks;
mod host;
mod layer;
mod options;
mod request;
pub mod runtime;
mod schema;
mod storage;
mod transport;
mod url;
mod validate;
mod vecmap;

pub use client::Client;

/// talc instead of std's dlmalloc: a smaller module at the same speed
/// (Cargo.toml says what was measured). The module is single-threaded: it is
/// built without the `atomics` target feature, which talc's cell requires.
#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
