//! What the virtual-time simulations (`tests/sim.rs`, `tests/pagesim.rs`,
//! `tests/pagesim_steady.rs`) share: a deterministic random source, an
//! event queue in virtual time, a call's spec, what the engine does after
//! each decision, and its steps before an attempt (admit, then a slot).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use stormguard::policy::breaker::{Permit, ProbeWaiter};
use stormguard::policy::guard::{Admission, Attempt, CallState, Ended, Guard, Spec, Stop, Verdict};
use stormguard::policy::limiter::{Acquire, WaiterId};
use stormguard::policy::options::{CallConfig, ClientConfig};
use stormguard::policy::ratelimit::Why;

/// xorshift64*: deterministic, for the simulation only.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.next() * (hi - lo)
    }
}

/// Events in virtual time (whole microseconds); events at the same time
/// come in the order they were scheduled.
pub struct Queue<E> {
    events: BinaryHeap<Reverse<(u64, u64, E)>>,
    seq: u64,
}

impl<E: Ord + Copy> Queue<E> {
    pub fn new() -> Self {
        Self {
            events: BinaryHeap::new(),
            seq: 0,
        }
    }

    pub fn at(&mut self, time_ms: f64, event: E) {
        self.seq += 1;
        self.events
            .push(Reverse(((time_ms * 1000.0) as u64, self.seq, event)));
    }

    /// The next event and its time (ms), if there is one by `until`; a later
    /// one stays queued.
    pub fn next_by(&mut self, until: f64) -> Option<(f64, E)> {
        let Reverse((micros, _, event)) = *self.events.peek()?;
        let now = micros as f64 / 1000.0;
        if now > until {
            return None;
        }
        self.events.pop();
        Some((now, event))
    }

    pub fn next(&mut self) -> Option<(f64, E)> {
        self.next_by(f64::INFINITY)
    }
}

/// A GET of `key` with the client's settings and no per-call options. Calls
/// borrow their spec for as long as the simulation runs.
pub fn spec(key: String, cfg: &ClientConfig) -> &'static Spec {
    Box::leak(Box::new(Spec {
        key,
        method: "GET".to_string(),
        has_key: false,
        cfg: CallConfig::resolve(cfg, &Default::default()).unwrap(),
        prefer_cache: false,
        refusable: false,
    }))
}

/// What the engine does after each decision: hear the breaker transitions
/// (counted in the guard's stats) and the holds for other tabs.
pub fn drain(guard: &mut Guard) {
    let _ = guard.drain_transitions();
    let _ = guard.drain_holds();
}

/// An answer with HTTP `status` (no Retry-After, no rate-limit reset): a
/// success when it is 200.
pub fn ended_with(status: u16) -> Ended<'static> {
    if status == 200 {
        Ended::Success
    } else {
        Ended::Status {
            status,
            retry_after: None,
            reset_ms: None,
        }
    }
}

/// The attempt out (`sent`) ended with `end`: the guard settles it, then
/// the engine drains.
pub fn settle(
    guard: &mut Guard,
    state: &mut CallState,
    sent: &mut Option<Attempt>,
    end: &Ended,
    now: f64,
    rand01: f64,
) -> Verdict {
    let permit = sent.take().and_then(|s| s.permit);
    let verdict = guard.settle(state, permit, end, None, now, 0.0, rand01);
    drain(guard);
    verdict
}

/// Where the engine's steps before an attempt leave a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Admitted and holding a slot: its attempt goes with this permit.
    Send(Option<Permit>),
    /// Asks again in `ms`.
    Wait { ms: f64, why: Why },
    /// Waits in [`Waiting`] for a probe's outcome.
    AwaitProbe,
    /// Admitted, waits in [`Waiting`] for a slot.
    Queued,
    /// Ends unsent (refused, out of time).
    Stop(Stop),
    /// Admitted, but no slot and the queue full: ends unsent, its permit
    /// given back.
    Full,
}

/// The engine's steps before an attempt of `call`, a call of `client`
/// whose guard is `guard`: admit (again after a wait), then a slot. A call
/// that waits for a probe or a slot waits in `waiting`.
pub fn admit_and_slot(
    guard: &mut Guard,
    state: &mut CallState,
    (client, call): (usize, usize),
    waiting: &mut Waiting,
    now: f64,
    coin: f64,
) -> Step {
    let admission = guard.admit(state, now, false, coin);
    drain(guard);
    let permit = match admission {
        Admission::Go(permit) => permit,
        Admission::Wait { ms, why, .. } => return Step::Wait { ms, why },
        Admission::AwaitProbe(w) => {
            waiting.probes.push((client, w, call));
            return Step::AwaitProbe;
        }
        Admission::Stop(stop) => return Step::Stop(stop),
        Admission::Online => unreachable!("the simulated host is always online"),
    };
    match guard.acquire_slot() {
        Acquire::Granted => Step::Send(permit),
        Acquire::Queued(w) => {
            waiting.slots.push((client, w, call, permit));
            Step::Queued
        }
        Acquire::Full => {
            guard.abandon(state, permit, now);
            Step::Full
        }
    }
}

/// The calls waiting in their client's guard (one `Guard` a client).
#[derive(Default)]
pub struct Waiting {
    /// For a probe's outcome: (client, waiter, call).
    pub probes: Vec<(usize, ProbeWaiter, usize)>,
    /// For a slot, admitted with a permit: (client, waiter, call, permit).
    pub slots: Vec<(usize, WaiterId, usize, Option<Permit>)>,
}

impl Waiting {
    /// The calls of `client` that its guard released from waiting for a
    /// probe (the probe came back or the key changed state), in queue
    /// order: they ask again.
    pub fn released(&mut self, client: usize, guard: &mut Guard) -> Vec<usize> {
        let mut calls = Vec::new();
        for w in guard.drain_released() {
            if let Some(i) = self.probes.iter().position(|p| p.0 == client && p.1 == w) {
                calls.push(self.probes.remove(i).2);
            }
        }
        calls
    }

    /// `client` frees a slot: the call queued for it, if any, takes it
    /// with the permit it was admitted with.
    pub fn slot_freed(
        &mut self,
        client: usize,
        guard: &mut Guard,
    ) -> Option<(usize, Option<Permit>)> {
        let w = guard.release_slot()?;
        let i = self.slots.iter().position(|p| p.0 == client && p.1 == w)?;
        let (_, _, call, permit) = self.slots.remove(i);
        Some((call, permit))
    }
}
