//! The runtime the calls run on: an executor, gates, timers, stop switches
//! and listeners. Nothing here knows of calls, options or policy; `cancel`
//! (a call's cancel state) and the call loop are built on it.
//!
//! Every invariant below is proven by a test in `tests/runtime.rs`, run in
//! Chromium and Firefox by `wasm-pack test` (`npm test`).
//!
//! * **A poll never nests inside another, and a wake is never lost.** A
//!   task woken while any task is being polled (itself included) is queued
//!   and polled again after that poll has returned; its `queued` mark is
//!   cleared before the poll, so a wake during the poll queues it anew.
//!   Proven by `wake_during_a_poll_is_queued_and_polled_again`.
//! * **A task woken by a promise it awaits through [`settle`] goes on in
//!   that promise's reaction job**, before any reaction registered after
//!   it (not a microtask later). Proven by
//!   `promise_wake_polls_the_task_in_the_reaction_job`.
//! * **A finished task drops its future at once, and a waker that outlives
//!   it is harmless**: a later wake polls nothing and panics nowhere, and
//!   the last waker frees the task. A future dropped pending (the loser of
//!   a [`Race`]) runs its destructors, and the promise it awaited may
//!   settle later without effect. Proven by
//!   `finished_task_drops_its_future_and_ignores_later_wakes` and
//!   `race_loser_is_dropped_pending_and_its_promise_settles_harmlessly`.
//! * **A dropped timer never fires**: an [`Alarm`] is removed from the
//!   alarm list on drop, a [`Timed`] wait clears its host timer. Proven by
//!   `dropped_alarm_never_fires` and `dropped_timed_wait_never_opens_its_gate`.
//! * **Timers fire in time order**: the one host timer is re-armed for an
//!   alarm due before the armed time, so each alarm fires at its own time.
//!   (Alarms found due at the same firing, the page busy past several,
//!   run in the order they were set.) Proven by `alarms_fire_in_time_order`.
//! * **Timers fire whatever `performance.now` says**: a fired host timer
//!   moves the engine's clock on to its time when `performance.now` stands
//!   still, runs backwards or throws (`policy::clock`), so an alarm is due
//!   when its host timer fires. Proven by
//!   `timers_fire_with_performance_now_frozen_or_running_backwards`.
//! * **A gate opens once**: the first `open` wins and decides the [`Wake`]
//!   its waiter sees. Proven by `gate_first_open_wins`.
//! * **A task spawned under a [`CallersContext`] is polled in its
//!   spawner's async context** (Node's AsyncLocalStorage), whichever event
//!   resumed it, so a token or headers function reading per-request state
//!   reads its own request's. Node only (browsers have no such context):
//!   proven by the AsyncLocalStorage test of `tests/e2e/node.test.mjs`.
//!
//! Two timer systems, on purpose: [`Alarm`]s share one host timer that is
//! unref'd in Node (attempt timeouts and breaker periods: a fetch in flight
//! keeps the process alive anyway, and an open breaker must not); a
//! [`Timed`] wait has a host timer of its own (backoff sleeps, queue and
//! online waits, hedge delays, a joiner's deadline), which keeps a Node
//! process alive until the call has ended.
//!
//! Every `async fn` of the call path is awaited through [`Apart`], which
//! polls it in a function of its own: rustc otherwise inlines a child's
//! state machine into its parent's, and the call loop was one 14.6 KB
//! function; apart they measured 435 bytes gzip less (issue 28).
//!
//! Every guard here whose drop has an effect is `#[must_use]`: [`Alarm`],
//! [`Timed`], [`EventLink`], [`OnAbort`], [`CallersContext`].

mod alarm;
mod executor;
mod gate;
mod listen;
mod stop;

pub use alarm::Alarm;
pub use executor::{settle, spawn, spawn_promise, Apart, CallersContext, Settle};
pub use gate::{sleep, Either, Gate, GateFuture, Race, Timed, Wake};
pub use listen::{EventLink, OnAbort};
pub use stop::Stop;
