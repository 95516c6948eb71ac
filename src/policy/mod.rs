//! The policy core: every rule stormguard applies, as plain state machines.
//!
//! Why a separate, pure core: a retry storm is a property of many calls over
//! time, which no browser test can reproduce reliably. Here time comes in as
//! `now_ms: f64` and randomness as `rand01: f64` in `[0, 1)`, nothing touches
//! JS, and nothing panics: so the same code the wasm engine runs is proven by
//! native unit tests, property tests and a virtual-time storm simulation
//! (`tests/sim.rs`).
//!
//! [`guard::Guard`] puts them together into the call loop's state machine,
//! the one the wasm engine asks at every step: for one attempt,
//! [`ratelimit::Limits::admit`] (holds, quotas), [`breaker::Breakers::acquire`],
//! a [`limiter::Limiter`] slot, the attempt (bounded by the deadline),
//! [`breaker::Breakers::record`] of [`classify::sample`], then
//! [`classify::plan_retry`] and, only if that allows a retry,
//! [`budget::RetryBudget::try_retry`].

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod call_options;
pub mod classify;
pub mod clock;
pub mod credentials;
pub mod deadline;
pub mod guard;
pub mod href;
pub mod key;
pub mod latency;
pub mod limiter;
pub mod option_table;
pub mod options;
pub mod ratelimit;
pub mod raw_options;
pub mod retry;
pub mod stats;
mod window;

pub use backoff::{parse_retry_after, Backoff};
pub use breaker::Breakers;
pub use budget::RetryBudget;
pub use classify::{plan_retry, Outcome, RetryDenied, RetryInput, Sample};
pub use deadline::Deadline;
pub use limiter::Limiter;
pub use options::{CallConfig, ClientConfig, OptionsError};
pub use stats::Stats;
