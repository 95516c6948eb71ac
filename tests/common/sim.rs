//! What the virtual-time simulations (`tests/sim.rs`, `tests/pagesim.rs`,
//! `tests/pagesim_steady.rs`) share: a deterministic random source, an
//! event queue in virtual time, a call's spec, and what the engine does
//! after each decision.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use stormguard::policy::guard::{Guard, Spec};
use stormguard::policy::options::{CallConfig, ClientConfig};

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
