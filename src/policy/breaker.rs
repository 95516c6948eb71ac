//! Circuit breakers, one per key (by default `METHOD origin+path`).
//!
//! # Why
//!
//! Retries and budgets still send every call to a backend that is down.
//! A breaker notices (failure rate over a sliding window, or a run of
//! consecutive failures), stops sending for a while, then lets a few probe
//! calls test the water. The first open period is short so a blip costs
//! seconds; each failed probe doubles it (up to `maxOpenMs`) so a long
//! outage hears almost nothing from this client.
//!
//! # States
//!
//! Closed -> Open (rate or run of failures) -> HalfOpen (the open
//! period passed; noticed by the next `acquire`, `record`, `state`,
//! `snapshot` or `refresh`, which the boundary calls on a timer set for
//! `next_half_open`, so the transition is reported on time) -> Closed (a probe succeeded: window cleared, period back to
//! `openMs`) or Open again (a probe failed: twice the last period, at most
//! `maxOpenMs`).
//!
//! # The row of failures
//!
//! `consecutiveFailures` counts an endpoint's failures since its last
//! success, but a call's own network errors never open it by themselves
//! (README, "breaker.consecutiveFailures"; the guard names the call for a
//! network error only, `CallState::row_if`): while the row holds one call's
//! failures only, its retries wait ([`Breakers::record_call`]), and they
//! count once another call fails in the row. A request the host refuses on every
//! attempt with a network error it cannot tell from an outage (a CORS
//! failure, a redirect to an invalid location) leaves the next calls free;
//! in an outage the next call fails too and opens it. Proven by
//! `a_calls_own_retries_never_open_its_breaker_by_themselves` and
//! `calls_that_fail_together_count_every_attempt_in_the_row`.
//!
//! # The half-open hold
//!
//! A call that finds every probe slot of a half-open key taken (README,
//! "breaker.halfOpenProbes") does not fail at once; it waits in
//! the key's queue ([`Breakers::wait`]) for the probes' outcome. Whenever a
//! probe permit comes back or the key changes state (a probe decided, another
//! tab's news, eviction), every waiter of the key is released, in queue
//! order ([`Breakers::drain_released`]), to ask `acquire` again: after a
//! success the key is closed and they go, after a failure it is open and
//! they are refused without sending, and after a probe that decided nothing
//! the first of them becomes the next probe. Proven by
//! `half_open_waiters_go_after_a_success_and_are_refused_after_a_failure`
//! and the property test below.
//!
//! # Permits and stragglers
//!
//! Every permit must be reported once with `record` (`Sample::Ignored` for an
//! abort or an attempt never sent). Stragglers, results of permits granted in
//! an earlier phase, decide nothing: a `Normal` result counts only while
//! Closed, a `Probe` result only while HalfOpen; any other just frees its
//! slot. (A `Normal` attempt that outlives a whole open/half-open/close cycle
//! does count in the new window: it needs to run longer than the open period.)
//!
//! # Probe-first retries
//!
//! Runs of failures are also counted per origin (`origin.rs`; README,
//! "breaker.consecutiveFailures"). When `consecutiveFailures`
//! failures in a row span several keys of one origin failing together (a
//! burst), the keys that failed together are *held* ([`Breakers::burst`]):
//! one call goes as the origin's probe ([`Permit::Origin`]), no earlier
//! than the time the host schedules ([`Breakers::schedule_probe`]: when a
//! retry of the burst would typically go), and the held keys' other calls
//! wait for its outcome in their keys' queues, the half-open hold's
//! machinery. A success ends the run and releases them; a failure is
//! counted ([`Burst::lost`]: each waiter spends an attempt without sending)
//! and releases them to wait for the next probe. Nothing is opened by the
//! origin: an endpoint's breaker counts its own row only, and an endpoint
//! that did not fail together in the burst is never held. Proven by
//! `a_burst_holds_its_endpoints_behind_one_probe` and the property test
//! `a_burst_probes_once_and_strands_no_waiter`.
//!
//! # One probe per origin when half-open
//!
//! Endpoints of one origin that failed together in a run (see
//! `origin.rs`) and are half-open at once probe one at a time: while one
//! of them has its half-open probe out, a call to another waits for that
//! probe (`sibling_probing`, the half-open hold's queue). When it comes
//! back, the waiters of every half-open key ask again; if it
//! failed, the others of its run that have no probe of their own out are
//! open again for their own period (not doubled): a page load deep in an
//! outage sends one probe, not one per endpoint (issue 42: the 60 s
//! page-load outage's amplification 0.64, probe load 0.47 of baseline).
//! After a success each probes for itself. Proven by
//! `half_open_endpoints_that_failed_together_probe_one_at_a_time`.
//!
//! # Adaptive throttling
//!
//! `mode: 'adaptive'` replaces the circuit with client-side throttling
//! (Google SRE book, "Handling Overload"): each call is rejected locally with
//! probability `max(0, (requests - k * accepts) / (requests + 1))` over the
//! window, where `requests` counts every call asked for (rejected ones too)
//! and `accepts` the ones the backend answered well. Load is shed in
//! proportion to what the backend refuses, smoothly, instead of all or
//! nothing; there are no transitions, and a snapshot reads HalfOpen while
//! some calls are being shed. Nothing is shed before `minSamples` requests.
//!
//! # Memory
//!
//! Memory is bounded: at most `max_keys` breakers (default 1000). A new key at
//! the cap evicts the least recently used breaker, whatever its state: one
//! with no permit out if there is one, else the least recently used of all.
//! The table never stops tracking: a table filled with open breakers (1000
//! failing per-id URLs, or `open` messages from another tab) must not leave
//! the next failing endpoint without a breaker. A result that comes back
//! for an evicted key finds no circuit and is dropped; had the key been
//! tracked again meanwhile, it counts in the new circuit as a straggler
//! would (only possible with more than `max_keys` keys busy at once).

use super::classify::Sample;
use super::option_table::{
    check, int, ms, one_of, table, unread, Given, Kind, Opt, OptionsError, Rule, MAX_DURATION_MS,
};
use super::window::Ring;
use origin::{origin_of, InRun, Origins};

mod origin;

table! {
    /// `breaker`'s options (README, "Client options"). `maxOpenMs` must
    /// also be at least `openMs`, and `k` is checked only in
    /// `mode: 'adaptive'` (it is last for that).
    BREAKER, BreakerMembers {
        window_ms: ms("windowMs", 0.0),
        min_samples: int("minSamples", 1.0, MAX_DURATION_MS),
        failure_rate: Opt {
            key: "failureRate",
            kind: Kind::Num,
            // Above 0: the least f64 above 0 is the least accepted.
            rule: Rule::Range(f64::from_bits(1), 1.0, "must be above 0 and at most 1"),
        },
        consecutive_failures: Opt {
            key: "consecutiveFailures",
            kind: Kind::NumOrOff,
            rule: Rule::Int(1.0, MAX_DURATION_MS),
        },
        open_ms: ms("openMs", 0.0),
        max_open_ms: ms("maxOpenMs", 0.0),
        half_open_probes: int("halfOpenProbes", 1.0, MAX_DURATION_MS),
        mode: one_of(
            "mode",
            &["binary", "adaptive"],
            "must be 'binary' or 'adaptive'",
        ),
        k: Opt {
            key: "k",
            kind: Kind::Num,
            // k < 1 would shed load from a backend that accepts everything.
            rule: Rule::Range(1.0, 100.0, "must be from 1 to 100"),
        },
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BreakerConfig {
    pub window_ms: f64,
    pub min_samples: u32,
    pub failure_rate: f64,
    pub consecutive_failures: Option<u32>,
    pub open_ms: f64,
    pub max_open_ms: f64,
    pub half_open_probes: u32,
    /// `mode: 'adaptive'`: client-side throttling with this `k` instead of
    /// an open/closed circuit (see breaker.rs); None for `'binary'`.
    pub adaptive_k: Option<f64>,
}

/// Default `k` of adaptive throttling: the SRE book's suggestion.
pub const DEFAULT_ADAPTIVE_K: f64 = 2.0;

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            window_ms: 60_000.0,
            min_samples: 10,
            failure_rate: 0.5,
            consecutive_failures: Some(3),
            open_ms: 2000.0,
            max_open_ms: 2000.0,
            half_open_probes: 1,
            adaptive_k: None,
        }
    }
}

impl BreakerConfig {
    /// `breaker`'s members over the defaults `d`.
    pub(super) fn from_members(g: &[Given], d: Self) -> Result<Self, OptionsError> {
        let m = BreakerMembers::of(g).ok_or_else(|| unread("breaker"))?;
        let adaptive = m.mode.text() == Some("adaptive");
        // `k` (last) only in adaptive mode.
        let checked = if adaptive { g.len() } else { g.len() - 1 };
        check("breaker", &BREAKER, g.get(..checked).unwrap_or(g))?;
        let open_ms = m.open_ms.num().unwrap_or(d.open_ms);
        let max_open_ms = m.max_open_ms.num().unwrap_or(d.max_open_ms.max(open_ms));
        if max_open_ms < open_ms {
            return Err(OptionsError::new(
                "breaker.maxOpenMs",
                "must be at least openMs",
            ));
        }
        Ok(Self {
            window_ms: m.window_ms.num().unwrap_or(d.window_ms),
            min_samples: m.min_samples.num().map_or(d.min_samples, |v| v as u32),
            failure_rate: m.failure_rate.num().unwrap_or(d.failure_rate),
            consecutive_failures: match m.consecutive_failures {
                Given::Off => None,
                g => g.num().map_or(d.consecutive_failures, |v| Some(v as u32)),
            },
            open_ms,
            max_open_ms,
            half_open_probes: m
                .half_open_probes
                .num()
                .map_or(d.half_open_probes, |v| v as u32),
            adaptive_k: adaptive.then(|| m.k.num().unwrap_or(DEFAULT_ADAPTIVE_K)),
        })
    }
}

pub const DEFAULT_MAX_KEYS: usize = 1000;

/// A burst's probe may go this much before its time: the timer that
/// waited for it may fire a hair early.
const EARLY_MS: f64 = 1.0;

/// Transitions kept until drained; past this the oldest are dropped.
const MAX_PENDING_TRANSITIONS: usize = 1024;

/// Seen by JS as `'closed' | 'open' | 'half-open'`: the names `as_str`
/// gives, and serde's kebab-case of the variants in `breakers()` and
/// events (the wasm only; tests/e2e/node.test.mjs reads all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(serde::Serialize),
    serde(rename_all = "kebab-case")
)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
        }
    }
}

/// A call's place in a half-open key's queue (see [`Breakers::wait`]).
pub type ProbeWaiter = u64;

/// A call, for its key's row of failures (`consecutiveFailures`): its id,
/// given at its first failure (0: none yet). See [`Breakers::record_call`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InRow(u64);

/// What `acquire` granted; hand it back to `record`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permit {
    Normal,
    /// The half-open key's probe.
    Probe,
    /// A closed key's call that goes as its origin's probe in a burst
    /// (counted as a `Normal` one for its own key).
    Origin,
}

/// Where a held key's calls stand with their origin's burst (see
/// [`Breakers::burst`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// The run: a call remembers it, to count the probes it lost.
    pub run: u64,
    /// The run's probes that failed so far.
    pub lost: u32,
    /// The origin's probe is out: wait for its outcome.
    pub probing: bool,
    /// Time before the next probe may go (0: now).
    pub probe_in_ms: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    pub key: String,
    pub from: State,
    pub to: State,
}

/// One entry of `client.breakers()`: the JS `BreakerSnapshot` is this
/// struct, field for field, in camelCase (serialized in the wasm only).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(serde::Serialize),
    serde(rename_all = "camelCase")
)]
pub struct Snapshot {
    pub key: String,
    pub state: State,
    /// Samples in the sliding window.
    pub samples: u32,
    /// Failures / samples in the window; 0 without samples.
    pub failure_rate: f64,
    /// While open: time left before half-open (as `CircuitOpenError.retryInMs`); else 0.
    pub open_for_ms: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    successes: u32,
    failures: u32,
    /// Calls rejected locally by adaptive throttling.
    rejected: u32,
}

#[derive(Debug, Clone)]
struct Circuit {
    state: State,
    window: Ring<Tally>,
    /// Failures in a row (`consecutiveFailures`), but for `repeats`.
    consecutive: u32,
    /// The call that failed first in the row ([`InRow`]).
    first: u64,
    /// Its failures after its first while no other call has failed in the
    /// row: they count once another call does.
    repeats: u32,
    /// Another call has failed in the row.
    several: bool,
    open_until: f64,
    /// The current (or last) open period.
    period_ms: f64,
    /// Probe permits out, from any half-open phase.
    probes: u32,
    /// All permits out.
    in_flight: u32,
    /// Calls waiting for the probes' outcome, oldest first.
    waiting: Vec<ProbeWaiter>,
    /// The run of its origin's failures it last failed in, and its
    /// failures there (see `origin.rs`).
    run: InRun,
    /// Its origin's probe permits out (`Permit::Origin`).
    origin_probes: u32,
}

type Change = Option<(State, State)>;

impl Circuit {
    fn new(cfg: &BreakerConfig) -> Self {
        Self {
            state: State::Closed,
            window: Ring::new(cfg.window_ms),
            consecutive: 0,
            first: 0,
            repeats: 0,
            several: false,
            open_until: 0.0,
            period_ms: cfg.open_ms,
            probes: 0,
            in_flight: 0,
            waiting: Vec::new(),
            run: InRun::default(),
            origin_probes: 0,
        }
    }

    /// Open -> HalfOpen once the open period has passed.
    fn refresh(&mut self, now_ms: f64) -> Change {
        // A NaN end (opened at a NaN time) must not keep it open forever.
        let over = now_ms >= self.open_until || self.open_until.is_nan();
        if self.state == State::Open && over {
            self.state = State::HalfOpen;
            return Some((State::Open, State::HalfOpen));
        }
        None
    }

    fn retry_in(&self, now_ms: f64) -> f64 {
        let left = self.open_until - now_ms;
        if left > 0.0 {
            left.min(self.period_ms)
        } else {
            0.0
        }
    }

    fn acquire(&mut self, cfg: &BreakerConfig, now_ms: f64, rand01: f64) -> Result<Permit, f64> {
        if let Some(k) = cfg.adaptive_k {
            if rand01 < self.shed_probability(cfg, k, now_ms) {
                self.window
                    .add(now_ms, |t| t.rejected = t.rejected.saturating_add(1));
                return Err(0.0);
            }
        }
        let permit = match self.state {
            State::Closed => Permit::Normal,
            State::Open => return Err(self.retry_in(now_ms)),
            State::HalfOpen if self.probes < cfg.half_open_probes => {
                self.probes += 1;
                Permit::Probe
            }
            // Every probe is out: their results decide (`wait` for them).
            State::HalfOpen => return Err(0.0),
        };
        self.in_flight = self.in_flight.saturating_add(1);
        Ok(permit)
    }

    /// `row` is who failed ([`InRow`]), `new_id` the id it takes if it has
    /// none yet.
    fn record(
        &mut self,
        cfg: &BreakerConfig,
        permit: Permit,
        sample: Sample,
        now_ms: f64,
        (row, new_id): (&mut InRow, u64),
    ) -> Change {
        self.in_flight = self.in_flight.saturating_sub(1);
        let permit = match permit {
            Permit::Probe => {
                self.probes = self.probes.saturating_sub(1);
                Permit::Probe
            }
            Permit::Origin => {
                self.origin_probes = self.origin_probes.saturating_sub(1);
                Permit::Normal
            }
            Permit::Normal => Permit::Normal,
        };
        match (permit, self.state, sample) {
            (Permit::Normal, State::Closed, Sample::Success) => {
                self.window
                    .add(now_ms, |t| t.successes = t.successes.saturating_add(1));
                self.consecutive = 0;
                None
            }
            (Permit::Normal, State::Closed, Sample::Failure) => {
                self.window
                    .add(now_ms, |t| t.failures = t.failures.saturating_add(1));
                if row.0 == 0 {
                    row.0 = new_id;
                }
                self.in_row(row.0);
                let (samples, failures) = self.tally(now_ms);
                let binary = cfg.adaptive_k.is_none();
                let by_rate = binary
                    && samples >= cfg.min_samples
                    && f64::from(failures) / f64::from(samples) > cfg.failure_rate;
                let by_run = binary
                    && cfg
                        .consecutive_failures
                        .is_some_and(|n| self.consecutive >= n);
                (by_rate || by_run).then(|| self.open(now_ms, cfg.open_ms))
            }
            (Permit::Probe, State::HalfOpen, Sample::Success) => {
                self.window.clear();
                self.consecutive = 0;
                self.period_ms = cfg.open_ms;
                self.state = State::Closed;
                Some((State::HalfOpen, State::Closed))
            }
            (Permit::Probe, State::HalfOpen, Sample::Failure) => {
                let period = (self.period_ms * 2.0).min(cfg.max_open_ms);
                Some(self.open(now_ms, period))
            }
            _ => None,
        }
    }

    /// The row of failures learns that call `id` failed (see
    /// [`Breakers::record_call`]).
    fn in_row(&mut self, id: u64) {
        if self.consecutive == 0 {
            (self.first, self.repeats, self.several) = (id, 0, false);
        } else if id != self.first {
            self.several = true;
        } else if !self.several {
            // The row's only call failed again: its retry waits.
            self.repeats = self.repeats.saturating_add(1);
            return;
        }
        self.consecutive = self.consecutive.saturating_add(1 + self.repeats);
        self.repeats = 0;
    }

    fn open(&mut self, now_ms: f64, period_ms: f64) -> (State, State) {
        let from = self.state;
        self.state = State::Open;
        self.period_ms = period_ms;
        self.open_until = now_ms + period_ms;
        (from, State::Open)
    }

    /// Adaptive throttling's rejection probability, 0 below `minSamples`.
    fn shed_probability(&self, cfg: &BreakerConfig, k: f64, now_ms: f64) -> f64 {
        let (requests, accepts) =
            self.window
                .by_age(now_ms)
                .iter()
                .fold((0u32, 0u32), |(r, a), t| {
                    (
                        r.saturating_add(t.successes)
                            .saturating_add(t.failures)
                            .saturating_add(t.rejected),
                        a.saturating_add(t.successes),
                    )
                });
        if requests < cfg.min_samples {
            return 0.0;
        }
        let (requests, accepts) = (f64::from(requests), f64::from(accepts));
        ((requests - k * accepts) / (requests + 1.0)).clamp(0.0, 1.0)
    }

    /// (samples, failures) in the window.
    fn tally(&self, now_ms: f64) -> (u32, u32) {
        self.window
            .by_age(now_ms)
            .iter()
            .fold((0u32, 0u32), |(s, f), t| {
                (
                    s.saturating_add(t.successes).saturating_add(t.failures),
                    f.saturating_add(t.failures),
                )
            })
    }
}

#[derive(Debug, Clone, Default)]
struct Log {
    /// Drained after every call, so dropping the oldest (a shift) is rare.
    pending: Vec<Transition>,
    opens: u64,
    /// Waiters whose wait is over, in the order they are to ask again.
    released: Vec<ProbeWaiter>,
    /// The last waiter's number.
    waiters: ProbeWaiter,
}

impl Log {
    fn push(&mut self, key: &str, change: Change) {
        let Some((from, to)) = change else { return };
        if to == State::Open {
            self.opens += 1;
        }
        if self.pending.len() >= MAX_PENDING_TRANSITIONS {
            self.pending.remove(0);
        }
        self.pending.push(Transition {
            key: key.to_owned(),
            from,
            to,
        });
    }

    /// Ends the wait of every caller queued on `c`.
    fn release(&mut self, c: &mut Circuit) {
        self.released.append(&mut c.waiting);
    }
}

#[derive(Debug, Clone)]
pub struct Breakers {
    cfg: BreakerConfig,
    max_keys: usize,
    /// Sorted by key. A Vec, not a BTreeMap: the same order and, for at
    /// most `max_keys` entries, a fraction of the wasm. Each circuit boxed
    /// beside the tick it was last used at: a circuit is ~430 bytes (its
    /// window's buckets), and a new key at the cap moved up to two Vecs'
    /// worth of them and scanned them all for the least recently used, 40 µs
    /// a call once 1000 per-id URLs had filled the table.
    circuits: Vec<(String, Box<Circuit>, u64)>,
    tick: u64,
    log: Log,
    origins: Origins,
}

impl Breakers {
    pub fn new(cfg: BreakerConfig) -> Self {
        Self::with_capacity_limit(cfg, DEFAULT_MAX_KEYS)
    }

    /// At most `max_keys` breakers are tracked (0: none, every key untracked).
    pub fn with_capacity_limit(cfg: BreakerConfig, max_keys: usize) -> Self {
        Self {
            cfg,
            max_keys,
            circuits: Vec::new(),
            tick: 0,
            log: Log::default(),
            origins: Origins::default(),
        }
    }

    /// `Err(retry_in_ms)` when open (time left of the open period), or when
    /// half-open with every probe slot taken (`Err(0.0)`: the probes'
    /// results decide; the call may [`Breakers::wait`] for them), or when adaptive
    /// throttling sheds this call (`Err(0.0)`; `rand01` is its coin).
    pub fn acquire(&mut self, key: &str, now_ms: f64, rand01: f64) -> Result<Permit, f64> {
        if !self.track(key) {
            return Ok(Permit::Normal);
        }
        self.tick += 1;
        let Some(c) = touched(&mut self.circuits, self.tick, key) else {
            return Ok(Permit::Normal);
        };
        c.run.sent = self.origins.seen();
        self.log.push(key, c.refresh(now_ms));
        let burst = self.held(key);
        // Held: the origin's probe, when no probe of the origin is out (one
        // sent for an earlier run included) and its time has come.
        let free = burst.is_some_and(|id| {
            !probing(&self.circuits, key)
                && self
                    .origins
                    .by_id(id)
                    .is_some_and(|r| now_ms >= r.probe_at - EARLY_MS)
        });
        let Some(c) = circuit(&mut self.circuits, key) else {
            return Ok(Permit::Normal);
        };
        let Some(id) = burst else {
            if c.state == State::HalfOpen && c.probes == 0 {
                let run = c.run.id;
                if sibling_probing(&self.circuits, run) {
                    return Err(0.0);
                }
            }
            let Some(c) = circuit(&mut self.circuits, key) else {
                return Ok(Permit::Normal);
            };
            return c.acquire(&self.cfg, now_ms, rand01);
        };
        if !free {
            return Err(0.0);
        }
        let permit = c.acquire(&self.cfg, now_ms, rand01)?;
        c.origin_probes += 1;
        if let Some(r) = self.origins.by_id(id) {
            r.scheduled = false;
        }
        Ok(match permit {
            Permit::Normal => Permit::Origin,
            other => other,
        })
    }

    /// The burst `key` is held by (its run's id): `key` is closed, failed
    /// together with others in its origin's current run, and that run is
    /// a burst (see `origin.rs`).
    fn held(&self, key: &str) -> Option<u64> {
        let n = self
            .cfg
            .consecutive_failures
            .filter(|_| self.cfg.adaptive_k.is_none())?;
        let run = self.origins.current(origin_of(key)?)?;
        let (_, c, _) = self.circuits.get(find(&self.circuits, key).ok()?)?;
        let held = c.state == State::Closed && c.run.together_in(&run) && run.correlated(n);
        held.then_some(run.id)
    }

    /// `key` failed together with others in its origin's current run (a
    /// burst, or one that may become one) and the run lost no probe (past
    /// a failed probe, an outage's tail, a retry the budget denies stays
    /// denied).
    pub fn in_run(&self, key: &str) -> bool {
        let Some(run) = origin_of(key).and_then(|o| self.origins.current(o)) else {
            return false;
        };
        if run.lost > 0 {
            return false;
        }
        find(&self.circuits, key)
            .ok()
            .and_then(|i| self.circuits.get(i))
            .is_some_and(|(_, c, _)| c.state == State::Closed && c.run.together_in(&run))
    }

    /// A retry of `key` the budget denied may go: its origin's blip is
    /// over (a burst's first probe succeeded) and nothing failed there
    /// since (see `origin.rs`, `Origins::released`).
    pub fn released(&self, key: &str) -> bool {
        origin_of(key).is_some_and(|o| self.origins.released(o))
    }

    /// Where `key`'s calls stand with its origin's burst; None when `key`
    /// is not held (its calls ask `acquire` as any).
    pub fn burst(&mut self, key: &str, now_ms: f64) -> Option<Burst> {
        let c = circuit(&mut self.circuits, key)?;
        self.log.push(key, c.refresh(now_ms));
        let id = self.held(key)?;
        let probing = probing(&self.circuits, key);
        let r = self.origins.by_id(id)?;
        Some(Burst {
            run: id,
            lost: r.lost,
            probing,
            probe_in_ms: if now_ms >= r.probe_at - EARLY_MS {
                0.0
            } else {
                r.probe_at - now_ms
            },
        })
    }

    /// A held key's call failed and would retry after `delay_ms` as a
    /// retry typically goes (its backoff, not a jittered draw): the
    /// origin's next probe goes no earlier than that, unless a time was
    /// set since the last probe went.
    pub fn schedule_probe(&mut self, key: &str, now_ms: f64, delay_ms: f64) {
        // The key's run, even when its own breaker has just opened (a
        // probe that failed a third time in its endpoint's row).
        let (Some(n), Some(origin)) = (self.cfg.consecutive_failures, origin_of(key)) else {
            return;
        };
        let Some(run) = self.origins.current(origin).filter(|r| r.correlated(n)) else {
            return;
        };
        let failed_in_it = find(&self.circuits, key)
            .ok()
            .and_then(|i| self.circuits.get(i))
            .is_some_and(|(_, c, _)| c.run.together_in(&run));
        if !failed_in_it || probing(&self.circuits, key) {
            return;
        }
        if let Some(r) = self.origins.by_id(run.id) {
            if !r.scheduled {
                r.probe_at = now_ms + delay_ms.max(0.0);
                r.scheduled = true;
            }
        }
    }

    /// Reports an attempt's outcome for a permit from `acquire`; `Ignored`
    /// frees a probe slot without deciding anything. The attempt is a call
    /// of its own (see [`Breakers::record_call`]).
    pub fn record(&mut self, key: &str, permit: Permit, sample: Sample, now_ms: f64) {
        self.record_call(key, permit, sample, now_ms, &mut InRow::default());
    }

    /// [`Breakers::record`] for an attempt of the call `row` names. Every
    /// attempt is a sample of the failure rate. In the row of failures
    /// (`consecutiveFailures`; README, "breaker.consecutiveFailures") the
    /// retries of the row's first call count only once another call has
    /// failed in the row too (then every one counts, as before): a call's
    /// own retries never open its endpoint by themselves. So a request whose
    /// network error repeats on every attempt (a CORS failure, a redirect to
    /// an invalid location: the host cannot tell them from an outage) leaves
    /// the next calls to its endpoint free, while in an outage, where the
    /// next call fails too, the endpoint opens at that call's failure.
    pub fn record_call(
        &mut self,
        key: &str,
        permit: Permit,
        sample: Sample,
        now_ms: f64,
        row: &mut InRow,
    ) {
        self.tick += 1;
        let new_id = self.tick;
        let Some(c) = touched(&mut self.circuits, self.tick, key) else {
            return;
        };
        self.log.push(key, c.refresh(now_ms));
        let change = c.record(&self.cfg, permit, sample, now_ms, (row, new_id));
        // A probe slot is free or the state changed: the waiters ask again.
        if permit != Permit::Normal || change.is_some() {
            self.log.release(c);
        }
        let run = c.run.id;
        self.log.push(key, change);
        if permit == Permit::Probe {
            let reopened = change.is_some_and(|(_, to)| to == State::Open);
            self.siblings_decided(run, reopened, now_ms);
        }
        self.correlate(key, permit, sample);
    }

    /// A half-open probe of run `run` came back (see [`sibling_probing`]):
    /// the waiters of every half-open key ask again, and if it failed
    /// (`reopened`), the half-open keys that failed in `run` (run ids are
    /// unique over every origin) and have no probe of their own out are
    /// open again for their own period: its failure is their probe's.
    fn siblings_decided(&mut self, run: u64, reopened: bool, now_ms: f64) {
        for (k, o, _) in &mut self.circuits {
            if o.state != State::HalfOpen {
                continue;
            }
            if reopened && run != 0 && o.run.id == run && o.probes == 0 {
                let period = o.period_ms;
                self.log.push(k, Some(o.open(now_ms, period)));
            }
            self.log.release(o);
        }
    }

    /// The origin's run of failures learns the sample (see `origin.rs`):
    /// a failure grows it (a burst's probe that failed is counted), a
    /// success ends it. When the origin's probe comes back or the run
    /// ends, the waiters of every key of the run ask again.
    fn correlate(&mut self, key: &str, permit: Permit, sample: Sample) {
        if self.cfg.consecutive_failures.is_none() || self.cfg.adaptive_k.is_some() {
            return;
        }
        let Some(origin) = origin_of(key) else {
            return;
        };
        let Some(c) = circuit(&mut self.circuits, key) else {
            return;
        };
        let probed = permit == Permit::Origin;
        // The origin's probe is the current run's, even one sent for a run
        // that has ended since (a success elsewhere): no other went while
        // it was out, and the current run's waiters wait for it.
        let current = self.origins.current(origin).map_or(0, |r| r.id);
        let mut wake = match permit {
            Permit::Origin => current,
            Permit::Probe => c.run.id,
            Permit::Normal => 0,
        };
        match sample {
            Sample::Failure => {
                let run = self.origins.failure(origin, &mut c.run);
                if probed && run.id == current {
                    if let Some(r) = self.origins.by_id(run.id) {
                        r.lost = r.lost.saturating_add(1);
                    }
                }
            }
            Sample::Success => {
                let n = self.cfg.consecutive_failures.unwrap_or(u32::MAX);
                if let Some(ended) = self.origins.success(origin, n) {
                    wake = ended.id;
                }
            }
            Sample::Ignored => {}
        }
        if wake != 0 {
            for (_, c, _) in self
                .circuits
                .iter_mut()
                .filter(|(_, c, _)| c.run.id == wake)
            {
                self.log.release(c);
            }
        }
    }

    /// `acquire` refused a call because every probe slot of the half-open
    /// `key` is taken: the call waits for their outcome instead, under the
    /// number returned, until [`Breakers::drain_released`] names it (then
    /// it asks `acquire` again) or it leaves ([`Breakers::stop_waiting`]).
    /// Also for a key held by its origin's burst while the origin's probe
    /// is out. None when `key` is neither: the refusal stands.
    pub fn wait(&mut self, key: &str) -> Option<ProbeWaiter> {
        let held = self.held(key).is_some() && probing(&self.circuits, key);
        let c = circuit(&mut self.circuits, key)?;
        if c.state != State::HalfOpen && !held {
            return None;
        }
        self.log.waiters += 1;
        c.waiting.push(self.log.waiters);
        Some(self.log.waiters)
    }

    /// The waiter leaves `key`'s queue (its call aborted or ran out of
    /// time); a waiter already released is not queued any more.
    pub fn stop_waiting(&mut self, key: &str, id: ProbeWaiter) {
        let Some(c) = circuit(&mut self.circuits, key) else {
            return;
        };
        if let Some(i) = c.waiting.iter().position(|w| *w == id) {
            c.waiting.remove(i);
        }
    }

    /// Waiters released since the last drain, in queue order (per key).
    pub fn drain_released(&mut self) -> Vec<ProbeWaiter> {
        std::mem::take(&mut self.log.released)
    }

    /// Calls waiting for a probe's outcome, over every key.
    pub fn waiting(&self) -> usize {
        self.circuits.iter().map(|(_, c, _)| c.waiting.len()).sum()
    }

    /// An untracked key reads as Closed.
    pub fn state(&mut self, key: &str, now_ms: f64) -> State {
        let Some(c) = circuit(&mut self.circuits, key) else {
            return State::Closed;
        };
        self.log.push(key, c.refresh(now_ms));
        c.state
    }

    /// When the first open breaker's period ends (None when none is open):
    /// the time to `refresh`, so it turns half-open then and not only when
    /// a call next asks.
    pub fn next_half_open(&self) -> Option<f64> {
        self.circuits
            .iter()
            .filter(|(_, c, _)| c.state == State::Open)
            .map(|(_, c, _)| c.open_until)
            .filter(|t| t.is_finite())
            .reduce(f64::min)
    }

    /// Turns every breaker whose open period has passed half-open.
    pub fn refresh(&mut self, now_ms: f64) {
        for (key, c, _) in &mut self.circuits {
            self.log.push(key, c.refresh(now_ms));
        }
    }

    /// Every tracked breaker, by key.
    pub fn snapshot(&mut self, now_ms: f64) -> Vec<Snapshot> {
        self.refresh(now_ms);
        let mut out = Vec::with_capacity(self.circuits.len());
        for (key, c, _) in &self.circuits {
            let (samples, failures) = c.tally(now_ms);
            let shedding = self
                .cfg
                .adaptive_k
                .is_some_and(|k| c.shed_probability(&self.cfg, k, now_ms) > 0.0);
            out.push(Snapshot {
                key: key.clone(),
                state: if shedding { State::HalfOpen } else { c.state },
                samples,
                failure_rate: if samples == 0 {
                    0.0
                } else {
                    f64::from(failures) / f64::from(samples)
                },
                open_for_ms: if c.state == State::Open {
                    c.retry_in(now_ms)
                } else {
                    0.0
                },
            });
        }
        out
    }

    /// Another client (a tab of the same origin) opened this key until
    /// `now_ms + open_for_ms`: open here too, unless already open for longer.
    /// Recorded as a transition like any other.
    pub fn force_open(&mut self, key: &str, now_ms: f64, open_for_ms: f64, period_ms: f64) {
        if self.cfg.adaptive_k.is_some() || open_for_ms.is_nan() || open_for_ms <= 0.0 {
            return;
        }
        if !self.track(key) {
            return;
        }
        self.tick += 1;
        let Some(c) = touched(&mut self.circuits, self.tick, key) else {
            return;
        };
        self.log.push(key, c.refresh(now_ms));
        // Never longer than this client's own longest period.
        let open_for_ms = open_for_ms.min(self.cfg.max_open_ms);
        let until = now_ms + open_for_ms;
        if c.state == State::Open && c.open_until >= until {
            return;
        }
        // The peer's period (it doubles on failed probes), kept sane.
        let period = if period_ms.is_finite() {
            period_ms
                .max(open_for_ms)
                .min(self.cfg.max_open_ms.max(open_for_ms))
        } else {
            open_for_ms
        };
        let change = c.open(now_ms, period);
        c.open_until = until;
        if change.0 != State::Open {
            self.log.release(c);
            self.log.push(key, Some(change));
        }
    }

    /// `(time left open, open period)` while `key` is open.
    pub fn open_info(&self, key: &str, now_ms: f64) -> Option<(f64, f64)> {
        find(&self.circuits, key)
            .ok()
            .and_then(|i| self.circuits.get(i))
            .map(|(_, c, _)| c)
            .filter(|c| c.state == State::Open)
            .map(|c| (c.retry_in(now_ms), c.period_ms))
    }

    /// Another client's probe closed this key: close here too (window
    /// cleared, period back to `openMs`), if it is open or half-open.
    pub fn force_close(&mut self, key: &str, now_ms: f64) {
        let Some(c) = circuit(&mut self.circuits, key) else {
            return;
        };
        self.log.push(key, c.refresh(now_ms));
        if c.state != State::Closed {
            let from = c.state;
            c.window.clear();
            c.consecutive = 0;
            c.period_ms = self.cfg.open_ms;
            c.state = State::Closed;
            self.log.release(c);
            self.log.push(key, Some((from, State::Closed)));
        }
    }

    /// Transitions since the last drain, oldest first.
    pub fn drain_transitions(&mut self) -> Vec<Transition> {
        std::mem::take(&mut self.log.pending)
    }

    /// Transitions to Open so far (first opens and re-opens).
    pub fn opens(&self) -> u64 {
        self.log.opens
    }

    /// Makes sure `key` has a circuit; false when it cannot have one.
    fn track(&mut self, key: &str) -> bool {
        if find(&self.circuits, key).is_ok() {
            return true;
        }
        if !self.make_room() {
            return false;
        }
        if let Err(i) = find(&self.circuits, key) {
            self.circuits
                .insert(i, (key.to_owned(), Box::new(Circuit::new(&self.cfg)), 0));
        }
        true
    }

    /// Frees a place for a new key if needed: evicts the least recently
    /// used breaker, open or not, preferring one with no permit out and no
    /// call waiting (whose waiters are released). False only with
    /// `max_keys` 0.
    fn make_room(&mut self) -> bool {
        if self.circuits.len() < self.max_keys {
            return true;
        }
        // One pass over the ticks beside the keys; a circuit is read (is it
        // busy?) only when its tick is older than the oldest idle one so far,
        // a few times in a table of 1000.
        let (mut idle, mut any) = (None, None);
        for (i, (_, c, t)) in self.circuits.iter().enumerate() {
            let older = |best: Option<(usize, u64)>| best.is_none_or(|(_, b)| *t < b);
            if older(any) {
                any = Some((i, *t));
            }
            if older(idle) && c.in_flight == 0 && c.waiting.is_empty() {
                idle = Some((i, *t));
            }
        }
        let victim = idle.or(any).map(|(i, _)| i);
        let Some((key, mut c, _)) = victim.map(|i| self.circuits.remove(i)) else {
            return false;
        };
        self.log.release(&mut c);
        if c.probes > 0 {
            self.siblings_decided(0, false, 0.0);
        }
        // It may have held its origin's probe: the current run's waiters
        // ask again, and its own run's.
        let probed = origin_of(&key)
            .and_then(|o| self.origins.current(o))
            .filter(|_| c.origin_probes > 0)
            .map_or(0, |r| r.id);
        for (_, other, _) in self
            .circuits
            .iter_mut()
            .filter(|(_, o, _)| o.run.id != 0 && (o.run.id == c.run.id || o.run.id == probed))
        {
            self.log.release(other);
        }
        true
    }
}

/// A probe of `key`'s origin is out ([`Permit::Origin`], counted by the key
/// it went for): one at a time over the origin, whichever run it went for.
fn probing(circuits: &[(String, Box<Circuit>, u64)], key: &str) -> bool {
    let origin = origin_of(key);
    origin.is_some()
        && circuits
            .iter()
            .any(|(k, c, _)| c.origin_probes > 0 && origin_of(k) == origin)
}

/// A key that failed in run `run` (of one origin: run ids are unique) has
/// its half-open probe out.
fn sibling_probing(circuits: &[(String, Box<Circuit>, u64)], run: u64) -> bool {
    run != 0
        && circuits
            .iter()
            .any(|(_, c, _)| c.probes > 0 && c.run.id == run)
}

/// Where `key` is in `circuits`, or where it would go.
fn find(circuits: &[(String, Box<Circuit>, u64)], key: &str) -> Result<usize, usize> {
    circuits.binary_search_by(|(k, ..)| k.as_str().cmp(key))
}

fn circuit<'a>(
    circuits: &'a mut [(String, Box<Circuit>, u64)],
    key: &str,
) -> Option<&'a mut Circuit> {
    let i = find(circuits, key).ok()?;
    circuits.get_mut(i).map(|(_, c, _)| &mut **c)
}

/// `key`'s circuit, marked used at `tick`.
fn touched<'a>(
    circuits: &'a mut [(String, Box<Circuit>, u64)],
    tick: u64,
    key: &str,
) -> Option<&'a mut Circuit> {
    let i = find(circuits, key).ok()?;
    let (_, c, used) = circuits.get_mut(i)?;
    *used = tick;
    Some(c)
}

// Native only: proptest is a native dev-dependency, and `wasm-pack test`
// builds every test target for wasm32.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const K: &str = "GET https://api.example/x";

    /// The failure-rate rule alone, with a 5 s open period doubling to
    /// 30 s: the mechanics these tests check, whatever the defaults are.
    fn cfg() -> BreakerConfig {
        BreakerConfig {
            min_samples: 4,
            consecutive_failures: None,
            open_ms: 5000.0,
            max_open_ms: 30_000.0,
            ..BreakerConfig::default()
        }
    }

    fn call(b: &mut Breakers, key: &str, sample: Sample, now: f64) -> Result<Permit, f64> {
        let p = b.acquire(key, now, 0.5)?;
        b.record(key, p, sample, now);
        Ok(p)
    }

    /// Opens K at `now` with min_samples failures.
    fn open(b: &mut Breakers, now: f64) {
        for _ in 0..4 {
            call(b, K, Sample::Failure, now).unwrap();
        }
        assert_eq!(b.state(K, now), State::Open);
    }

    fn changes(b: &mut Breakers) -> Vec<(State, State)> {
        b.drain_transitions()
            .into_iter()
            .map(|t| (t.from, t.to))
            .collect()
    }

    #[test]
    fn state_names() {
        let names = [State::Closed, State::Open, State::HalfOpen].map(State::as_str);
        assert_eq!(names, ["closed", "open", "half-open"]);
    }

    #[test]
    fn stays_closed_below_min_samples() {
        let mut b = Breakers::new(cfg());
        for _ in 0..3 {
            assert_eq!(call(&mut b, K, Sample::Failure, 0.0), Ok(Permit::Normal));
        }
        assert_eq!(b.state(K, 0.0), State::Closed);
        assert!(b.drain_transitions().is_empty());
    }

    #[test]
    fn opens_when_failure_rate_exceeds_threshold() {
        let mut b = Breakers::new(cfg());
        for s in [
            Sample::Success,
            Sample::Success,
            Sample::Failure,
            Sample::Failure,
        ] {
            call(&mut b, K, s, 0.0).unwrap();
        }
        // 2 / 4 = 0.5 is not above 0.5.
        assert_eq!(b.state(K, 0.0), State::Closed);
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        assert_eq!(b.state(K, 0.0), State::Open);
        assert_eq!(changes(&mut b), [(State::Closed, State::Open)]);
        assert_eq!(b.opens(), 1);
        let t = b.drain_transitions();
        assert!(t.is_empty());
    }

    #[test]
    fn transition_names_the_key() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        assert_eq!(
            b.drain_transitions(),
            [Transition {
                key: K.into(),
                from: State::Closed,
                to: State::Open
            }]
        );
    }

    #[test]
    fn successes_are_not_failures_and_ignored_is_nothing() {
        let mut b = Breakers::new(cfg());
        for _ in 0..20 {
            call(&mut b, K, Sample::Success, 0.0).unwrap();
            call(&mut b, K, Sample::Ignored, 0.0).unwrap();
        }
        for _ in 0..20 {
            call(&mut b, K, Sample::Failure, 0.0).unwrap();
        }
        // 20 / 40 = 0.5: still closed; ignored samples did not count.
        assert_eq!(b.state(K, 0.0), State::Closed);
        let s = &b.snapshot(0.0)[0];
        assert_eq!((s.samples, s.failure_rate), (40, 0.5));
    }

    #[test]
    fn opens_after_consecutive_failures() {
        let mut b = Breakers::new(BreakerConfig {
            consecutive_failures: Some(3),
            ..BreakerConfig::default()
        });
        for _ in 0..5 {
            call(&mut b, K, Sample::Success, 0.0).unwrap();
        }
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        call(&mut b, K, Sample::Success, 0.0).unwrap();
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        assert_eq!(b.state(K, 0.0), State::Closed);
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        assert_eq!(b.state(K, 0.0), State::Open);
    }

    /// One call's attempt at `now`, recorded as that call's (`row`).
    fn attempt(b: &mut Breakers, row: &mut InRow, sample: Sample, now: f64) {
        let p = b.acquire(K, now, 0.5).unwrap();
        b.record_call(K, p, sample, now, row);
    }

    #[test]
    fn a_calls_own_retries_never_open_its_breaker_by_themselves() {
        // WPT fetch/api: a GET whose network error repeats on every attempt
        // (a CORS failure, a redirect to an invalid location) failed 3
        // attempts and opened the breaker by itself for the test's next,
        // valid calls. The rate still counts every attempt.
        let mut b = Breakers::new(BreakerConfig::default());
        let mut a = InRow::default();
        for _ in 0..3 {
            attempt(&mut b, &mut a, Sample::Failure, 0.0);
        }
        assert_eq!(b.state(K, 0.0), State::Closed);
        let s = &b.snapshot(0.0)[0];
        assert_eq!((s.samples, s.failure_rate), (3, 1.0));
        // The next call succeeds (the test's next, valid request): the row
        // ends; another such call alone opens nothing either.
        attempt(&mut b, &mut InRow::default(), Sample::Success, 0.0);
        let mut c = InRow::default();
        for _ in 0..3 {
            attempt(&mut b, &mut c, Sample::Failure, 0.0);
        }
        assert_eq!(b.state(K, 0.0), State::Closed);
        // In an outage the next call fails too: its failure opens it (the
        // row holds 4 failures of 2 calls).
        attempt(&mut b, &mut InRow::default(), Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Open);
        // With `consecutiveFailures: 1` a call's first failure opens it.
        let mut b = Breakers::new(BreakerConfig {
            consecutive_failures: Some(1),
            ..BreakerConfig::default()
        });
        attempt(&mut b, &mut InRow::default(), Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Open);
    }

    #[test]
    fn calls_that_fail_together_count_every_attempt_in_the_row() {
        // A poller's calls in an outage: its first call's retries are still
        // due when its next call fails: 3 failed attempts open, as before.
        let mut b = Breakers::new(BreakerConfig::default());
        let (mut a, mut c) = (InRow::default(), InRow::default());
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Closed);
        attempt(&mut b, &mut c, Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Open);
        // Interleaved the same: A, B, A.
        let mut b = Breakers::new(BreakerConfig::default());
        let (mut a, mut c) = (InRow::default(), InRow::default());
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        attempt(&mut b, &mut c, Sample::Failure, 0.0);
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Open);
        // A success ends the row: a call's failures before it are gone.
        let mut b = Breakers::new(BreakerConfig::default());
        let (mut a, mut c) = (InRow::default(), InRow::default());
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        attempt(&mut b, &mut InRow::default(), Sample::Success, 0.0);
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        attempt(&mut b, &mut c, Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Closed);
        attempt(&mut b, &mut a, Sample::Failure, 0.0);
        assert_eq!(b.state(K, 0.0), State::Open);
    }

    #[test]
    fn defaults_open_after_3_in_a_row_and_probe_every_2_s() {
        let mut b = Breakers::new(BreakerConfig::default());
        // Well under minSamples (10): the run of 3 opens it, not the rate.
        for _ in 0..2 {
            call(&mut b, K, Sample::Failure, 0.0).unwrap();
        }
        assert_eq!(b.state(K, 0.0), State::Closed);
        call(&mut b, K, Sample::Failure, 0.0).unwrap();
        assert_eq!(b.state(K, 0.0), State::Open);
        assert_eq!(b.acquire(K, 500.0, 0.5), Err(1500.0));
        // Every failed probe opens it again for 2 s, never longer.
        let mut now = 0.0;
        for _ in 0..5 {
            now += 2000.0;
            assert_eq!(b.state(K, now), State::HalfOpen);
            let p = b.acquire(K, now, 0.5).unwrap();
            assert_eq!(p, Permit::Probe);
            b.record(K, p, Sample::Failure, now);
            assert_eq!(b.acquire(K, now, 0.5), Err(2000.0));
        }
        // A probe that succeeds closes it.
        now += 2000.0;
        let p = b.acquire(K, now, 0.5).unwrap();
        b.record(K, p, Sample::Success, now);
        assert_eq!(b.state(K, now), State::Closed);
    }

    #[test]
    fn old_failures_slide_out_of_the_window() {
        let mut b = Breakers::new(cfg());
        for _ in 0..3 {
            call(&mut b, K, Sample::Failure, 0.0).unwrap();
        }
        call(&mut b, K, Sample::Failure, 60_000.0).unwrap();
        assert_eq!(b.state(K, 60_000.0), State::Closed);
        assert_eq!(b.snapshot(60_000.0)[0].samples, 1);
    }

    #[test]
    fn open_rejects_with_time_left() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 1000.0);
        assert_eq!(b.acquire(K, 1000.0, 0.5), Err(5000.0));
        assert_eq!(b.acquire(K, 4000.0, 0.5), Err(2000.0));
        // A clock stepping back never reports more than the period.
        assert_eq!(b.acquire(K, 0.0, 0.5), Err(5000.0));
        let s = &b.snapshot(4000.0)[0];
        assert_eq!((s.state, s.open_for_ms), (State::Open, 2000.0));
    }

    #[test]
    fn half_open_after_the_period_then_probe_success_closes() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        changes(&mut b);
        assert_eq!(b.state(K, 4999.0), State::Open);
        assert_eq!(b.state(K, 5000.0), State::HalfOpen);
        assert_eq!(changes(&mut b), [(State::Open, State::HalfOpen)]);
        let p = b.acquire(K, 5000.0, 0.5).unwrap();
        assert_eq!(p, Permit::Probe);
        assert_eq!(b.acquire(K, 5001.0, 0.5), Err(0.0));
        b.record(K, p, Sample::Success, 5100.0);
        assert_eq!(b.state(K, 5100.0), State::Closed);
        assert_eq!(changes(&mut b), [(State::HalfOpen, State::Closed)]);
        // Window cleared.
        let s = &b.snapshot(5100.0)[0];
        assert_eq!((s.samples, s.failure_rate, s.open_for_ms), (0, 0.0, 0.0));
        assert_eq!(b.acquire(K, 5100.0, 0.5), Ok(Permit::Normal));
    }

    #[test]
    fn half_open_is_noticed_by_acquire_and_snapshot() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        changes(&mut b);
        assert_eq!(b.snapshot(6000.0)[0].state, State::HalfOpen);
        assert_eq!(changes(&mut b), [(State::Open, State::HalfOpen)]);
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        changes(&mut b);
        assert_eq!(b.acquire(K, 6000.0, 0.5), Ok(Permit::Probe));
        assert_eq!(changes(&mut b), [(State::Open, State::HalfOpen)]);
    }

    #[test]
    fn refresh_at_next_half_open_turns_the_earliest_on_time() {
        let mut b = Breakers::new(cfg());
        assert_eq!(b.next_half_open(), None);
        open(&mut b, 0.0);
        for _ in 0..4 {
            call(&mut b, "other", Sample::Failure, 1000.0).unwrap();
        }
        changes(&mut b);
        assert_eq!(b.next_half_open(), Some(5000.0));
        b.refresh(4999.0);
        assert!(changes(&mut b).is_empty());
        b.refresh(5000.0);
        assert_eq!(changes(&mut b), [(State::Open, State::HalfOpen)]);
        assert_eq!(b.next_half_open(), Some(6000.0));
        b.refresh(6000.0);
        assert_eq!(changes(&mut b), [(State::Open, State::HalfOpen)]);
        assert_eq!(
            b.next_half_open(),
            None,
            "half-open waits for probes, not time"
        );
        let p = b.acquire(K, 6000.0, 0.5).unwrap();
        b.record(K, p, Sample::Failure, 6000.0);
        assert_eq!(
            b.next_half_open(),
            Some(16000.0),
            "a failed probe re-opens for twice"
        );
    }

    #[test]
    fn probe_failure_doubles_the_period_up_to_max() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        let mut now = 0.0;
        for period in [10_000.0, 20_000.0, 30_000.0, 30_000.0] {
            now += 100_000.0;
            let p = b.acquire(K, now, 0.5).unwrap();
            assert_eq!(p, Permit::Probe);
            b.record(K, p, Sample::Failure, now);
            assert_eq!(b.acquire(K, now, 0.5), Err(period));
        }
        assert_eq!(b.opens(), 5);
        // A success brings the period back to openMs.
        now += 100_000.0;
        let p = b.acquire(K, now, 0.5).unwrap();
        b.record(K, p, Sample::Success, now);
        open(&mut b, now);
        assert_eq!(b.acquire(K, now, 0.5), Err(5000.0));
    }

    #[test]
    fn ignored_probe_frees_its_slot_without_deciding() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        let p = b.acquire(K, 5000.0, 0.5).unwrap();
        b.record(K, p, Sample::Ignored, 5000.0);
        assert_eq!(b.state(K, 5000.0), State::HalfOpen);
        assert_eq!(b.acquire(K, 5000.0, 0.5), Ok(Permit::Probe));
    }

    /// A breaker of two half-open probes, opened at 0: both probes out at
    /// 5000.
    fn two_probes_out() -> (Breakers, Permit, Permit) {
        let mut b = Breakers::new(BreakerConfig {
            half_open_probes: 2,
            ..cfg()
        });
        open(&mut b, 0.0);
        let p1 = b.acquire(K, 5000.0, 0.5).unwrap();
        let p2 = b.acquire(K, 5000.0, 0.5).unwrap();
        (b, p1, p2)
    }

    #[test]
    fn several_probes_when_configured() {
        let (mut b, p1, p2) = two_probes_out();
        assert_eq!((p1, p2), (Permit::Probe, Permit::Probe));
        assert_eq!(b.acquire(K, 5000.0, 0.5), Err(0.0));
        // First probe fails: open again; the second's success arrives late and decides nothing.
        b.record(K, p1, Sample::Failure, 5100.0);
        b.record(K, p2, Sample::Success, 5200.0);
        assert_eq!(b.state(K, 5200.0), State::Open);
    }

    #[test]
    fn late_probe_from_an_earlier_phase_keeps_its_slot_counted() {
        let (mut b, p1, p2) = two_probes_out();
        b.record(K, p1, Sample::Failure, 5000.0);
        // Half-open again while p2 is still out: only one new probe fits.
        assert_eq!(b.acquire(K, 15_000.0, 0.5), Ok(Permit::Probe));
        assert_eq!(b.acquire(K, 15_000.0, 0.5), Err(0.0));
        b.record(K, p2, Sample::Ignored, 15_000.0);
        assert_eq!(b.acquire(K, 15_000.0, 0.5), Ok(Permit::Probe));
    }

    #[test]
    fn stragglers_do_not_corrupt_the_state() {
        let mut b = Breakers::new(cfg());
        let late: Vec<Permit> = (0..3).map(|_| b.acquire(K, 0.0, 0.5).unwrap()).collect();
        open(&mut b, 0.0);
        // Normal results arriving while open change nothing.
        b.record(K, late[0], Sample::Success, 100.0);
        assert_eq!(b.state(K, 100.0), State::Open);
        // ... nor while half-open: the probe alone decides.
        let probe = b.acquire(K, 5000.0, 0.5).unwrap();
        b.record(K, late[1], Sample::Success, 5000.0);
        b.record(K, late[2], Sample::Failure, 5000.0);
        assert_eq!(b.state(K, 5000.0), State::HalfOpen);
        assert_eq!(b.acquire(K, 5000.0, 0.5), Err(0.0));
        b.record(K, probe, Sample::Success, 5000.0);
        assert_eq!(b.state(K, 5000.0), State::Closed);
        assert_eq!(b.snapshot(5000.0)[0].samples, 0);
    }

    #[test]
    fn keys_are_independent() {
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        assert_eq!(
            b.acquire("GET https://api.example/y", 0.0, 0.5),
            Ok(Permit::Normal)
        );
        assert_eq!(b.state("never seen", 0.0), State::Closed);
        let keys: Vec<String> = b.snapshot(0.0).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, [K, "GET https://api.example/y"]);
    }

    #[test]
    fn cap_evicts_the_least_recently_used_key() {
        let mut b = Breakers::with_capacity_limit(cfg(), 2);
        call(&mut b, "a", Sample::Success, 0.0).unwrap();
        call(&mut b, "b", Sample::Success, 0.0).unwrap();
        call(&mut b, "a", Sample::Success, 0.0).unwrap();
        call(&mut b, "c", Sample::Success, 0.0).unwrap();
        let keys: Vec<String> = b.snapshot(0.0).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["a", "c"]);
    }

    #[test]
    fn cap_evicts_open_keys_so_a_new_failing_key_gets_a_breaker() {
        // Issue 14, item 4: 1000 opened breakers must not switch the
        // breaker off for the next endpoint.
        let mut b = Breakers::new(cfg());
        for i in 0..DEFAULT_MAX_KEYS {
            let key = format!("GET https://api.example/item/{i}");
            for _ in 0..4 {
                call(&mut b, &key, Sample::Failure, 0.0).unwrap();
            }
            assert_eq!(b.state(&key, 0.0), State::Open);
        }
        let victim = "GET https://api.example/victim";
        let mut sent = 0;
        for _ in 0..20 {
            if call(&mut b, victim, Sample::Failure, 1.0).is_ok() {
                sent += 1;
            }
        }
        assert_eq!(sent, 4, "the victim's breaker opened after minSamples");
        assert_eq!(b.state(victim, 1.0), State::Open);
        let snap = b.snapshot(1.0);
        assert_eq!(snap.len(), DEFAULT_MAX_KEYS);
        assert!(snap.iter().any(|s| s.key == victim));
        // The least recently used went: the first key opened.
        assert!(!snap
            .iter()
            .any(|s| s.key == "GET https://api.example/item/0"));
        assert!(snap
            .iter()
            .any(|s| s.key == "GET https://api.example/item/1"));
    }

    #[test]
    fn cap_evicts_peer_opened_keys_too() {
        let mut b = Breakers::new(cfg());
        for i in 0..DEFAULT_MAX_KEYS + 5 {
            b.force_open(&format!("peer {i}"), 0.0, 5000.0, 5000.0);
        }
        assert_eq!(b.snapshot(0.0).len(), DEFAULT_MAX_KEYS);
        for _ in 0..4 {
            call(&mut b, K, Sample::Failure, 1.0).unwrap();
        }
        assert_eq!(b.state(K, 1.0), State::Open);
        let keys: Vec<String> = b.snapshot(1.0).into_iter().map(|s| s.key).collect();
        assert!(keys.iter().any(|k| k == K));
        assert!(
            !keys.iter().any(|k| k == "peer 5"),
            "oldest peer key evicted"
        );
    }

    #[test]
    fn cap_prefers_idle_keys_then_evicts_busy_ones() {
        let mut b = Breakers::with_capacity_limit(cfg(), 2);
        let busy = b.acquire("busy", 0.0, 0.5).unwrap();
        open(&mut b, 0.0);
        // "busy" is older but has a permit out: the open K goes.
        call(&mut b, "new", Sample::Failure, 0.0).unwrap();
        let keys: Vec<String> = b.snapshot(0.0).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["busy", "new"]);
        // Every key busy: the least recently used goes all the same.
        let p = b.acquire("new", 0.0, 0.5).unwrap();
        assert_eq!(b.acquire("third", 0.0, 0.5), Ok(Permit::Normal));
        let keys: Vec<String> = b.snapshot(0.0).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["new", "third"]);
        // The evicted key's late result is dropped, nothing panics.
        b.record("busy", busy, Sample::Failure, 0.0);
        b.record("new", p, Sample::Success, 0.0);
        assert_eq!(b.snapshot(0.0).len(), 2);
    }

    #[test]
    fn zero_capacity_tracks_nothing() {
        let mut b = Breakers::with_capacity_limit(cfg(), 0);
        for _ in 0..20 {
            assert_eq!(call(&mut b, K, Sample::Failure, 0.0), Ok(Permit::Normal));
        }
        assert!(b.snapshot(0.0).is_empty());
    }

    #[test]
    fn undrained_transitions_are_bounded() {
        let mut b = Breakers::new(BreakerConfig {
            min_samples: 1,
            open_ms: 0.0,
            max_open_ms: 0.0,
            ..BreakerConfig::default()
        });
        for i in 0..3000 {
            let now = f64::from(i);
            if let Ok(p) = b.acquire(K, now, 0.5) {
                b.record(K, p, Sample::Failure, now);
            }
        }
        assert_eq!(b.drain_transitions().len(), MAX_PENDING_TRANSITIONS);
        assert!(b.opens() >= 1500);
    }

    #[test]
    fn odd_clock_values_do_not_panic_or_stick() {
        let mut b = Breakers::new(cfg());
        for _ in 0..4 {
            let p = b.acquire(K, f64::NAN, 0.5).unwrap();
            b.record(K, p, Sample::Failure, f64::NAN);
        }
        // Opened at NaN: no timer is set for a NaN end (it would fire at
        // once, forever), and the next real reading sees the period over.
        assert_eq!(b.next_half_open(), None);
        assert_eq!(b.acquire(K, 0.0, 0.5), Ok(Permit::Probe));
        let _ = b.snapshot(f64::INFINITY);
    }

    /// A half-open K with its one probe out, and `n` calls waiting for it.
    fn probing_with_waiters(b: &mut Breakers, n: usize) -> (Permit, Vec<ProbeWaiter>) {
        open(b, 0.0);
        let probe = b.acquire(K, 5000.0, 0.5).unwrap();
        assert_eq!(probe, Permit::Probe);
        let waiters = (0..n)
            .map(|_| {
                assert_eq!(b.acquire(K, 5000.0, 0.5), Err(0.0));
                b.wait(K).unwrap()
            })
            .collect();
        (probe, waiters)
    }

    #[test]
    fn half_open_waiters_go_after_a_success_and_are_refused_after_a_failure() {
        // Success: released in queue order, and the key is closed for them.
        let mut b = Breakers::new(cfg());
        let (probe, waiters) = probing_with_waiters(&mut b, 3);
        assert_eq!(b.waiting(), 3);
        assert!(b.drain_released().is_empty(), "nobody released yet");
        b.record(K, probe, Sample::Success, 5100.0);
        assert_eq!(b.drain_released(), waiters);
        assert_eq!(b.waiting(), 0);
        for _ in &waiters {
            assert_eq!(b.acquire(K, 5100.0, 0.5), Ok(Permit::Normal));
        }
        // Failure: released, and refused with the new open period.
        let mut b = Breakers::new(cfg());
        let (probe, waiters) = probing_with_waiters(&mut b, 2);
        b.record(K, probe, Sample::Failure, 5100.0);
        assert_eq!(b.drain_released(), waiters);
        for _ in &waiters {
            assert_eq!(b.acquire(K, 5100.0, 0.5), Err(10_000.0));
            assert_eq!(b.wait(K), None, "an open key is no wait");
        }
    }

    #[test]
    fn a_probe_that_decides_nothing_hands_the_probe_to_the_first_waiter() {
        let mut b = Breakers::new(cfg());
        let (probe, waiters) = probing_with_waiters(&mut b, 3);
        // The probe's caller aborted: still half-open, the slot is free.
        b.record(K, probe, Sample::Ignored, 5100.0);
        assert_eq!(b.drain_released(), waiters);
        assert_eq!(b.acquire(K, 5100.0, 0.5), Ok(Permit::Probe));
        assert_eq!(b.acquire(K, 5100.0, 0.5), Err(0.0));
        let again = [b.wait(K).unwrap(), b.wait(K).unwrap()];
        assert!(again[0] > waiters[2], "numbers keep growing: {again:?}");
        assert_eq!(b.waiting(), 2);
    }

    #[test]
    fn a_waiter_that_leaves_is_not_released() {
        let mut b = Breakers::new(cfg());
        let (probe, waiters) = probing_with_waiters(&mut b, 3);
        b.stop_waiting(K, waiters[1]);
        b.stop_waiting("unknown", waiters[0]);
        assert_eq!(b.waiting(), 2);
        b.record(K, probe, Sample::Success, 5100.0);
        assert_eq!(b.drain_released(), [waiters[0], waiters[2]]);
        // Leaving after the release changes nothing.
        b.stop_waiting(K, waiters[0]);
        assert!(b.drain_released().is_empty());
    }

    #[test]
    fn another_tabs_news_and_eviction_release_the_waiters() {
        let mut b = Breakers::new(cfg());
        let (_, waiters) = probing_with_waiters(&mut b, 2);
        b.force_close(K, 5100.0);
        assert_eq!(b.drain_released(), waiters);
        let mut b = Breakers::new(cfg());
        let (_, waiters) = probing_with_waiters(&mut b, 2);
        b.force_open(K, 5100.0, 4000.0, 10_000.0);
        assert_eq!(b.drain_released(), waiters);
        assert_eq!(b.acquire(K, 5100.0, 0.5), Err(4000.0));
        // A key evicted at the cap frees its waiters (it is the only choice).
        let mut b = Breakers::with_capacity_limit(cfg(), 1);
        let (_, waiters) = probing_with_waiters(&mut b, 2);
        assert_eq!(b.acquire("other", 5100.0, 0.5), Ok(Permit::Normal));
        assert_eq!(b.drain_released(), waiters);
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn only_a_half_open_key_is_waited_for() {
        let mut b = Breakers::new(cfg());
        assert_eq!(b.wait(K), None, "unknown key");
        call(&mut b, K, Sample::Success, 0.0).unwrap();
        assert_eq!(b.wait(K), None, "closed");
        let mut b = Breakers::new(cfg());
        open(&mut b, 0.0);
        assert_eq!(b.wait(K), None, "open");
        let mut b = Breakers::new(BreakerConfig {
            min_samples: 1,
            adaptive_k: Some(2.0),
            ..BreakerConfig::default()
        });
        for _ in 0..5 {
            let _ = call(&mut b, K, Sample::Failure, 0.0);
        }
        assert_eq!(b.acquire(K, 0.0, 0.0), Err(0.0), "shed");
        assert_eq!(b.wait(K), None, "a shed call does not wait");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Advance(f64),
        Acquire,
        /// Reports the permit at this index (mod the permits out).
        Record(usize, u8),
        /// The waiting call at this index (mod the calls waiting) leaves.
        Leave(usize),
    }

    proptest! {
        /// At the cap a new key evicts the least recently used breaker with
        /// no permit out, else the least recently used of all: the table
        /// holds the keys a model of that rule holds, after every call. (The
        /// eviction's one pass reads a circuit's permits only when its tick
        /// is older than the oldest idle one so far; this checks it against
        /// the rule.)
        #[test]
        fn the_cap_evicts_the_least_recently_used_idle_key(
            cap in 1..4usize,
            ops in prop::collection::vec((0..6usize, any::<bool>()), 1..80),
        ) {
            let mut b = Breakers::with_capacity_limit(cfg(), cap);
            // key -> (last use, permits out), and the permits to give back
            let mut model: Vec<(usize, u64, u32)> = Vec::new();
            let mut out: Vec<(usize, Permit)> = Vec::new();
            let mut tick = 0u64;
            for (k, finish) in ops {
                let key = format!("k{k}");
                if finish && !out.is_empty() {
                    let (k, p) = out.remove(0);
                    b.record(&format!("k{k}"), p, Sample::Success, 0.0);
                    tick += 1;
                    if let Some(m) = model.iter_mut().find(|m| m.0 == k) {
                        m.1 = tick;
                        m.2 = m.2.saturating_sub(1);
                    }
                } else {
                    if !model.iter().any(|m| m.0 == k) {
                        if model.len() == cap {
                            let victim = (0..model.len())
                                .min_by_key(|&i| (model[i].2 > 0, model[i].1))
                                .unwrap();
                            model.remove(victim);
                        }
                        model.push((k, 0, 0));
                    }
                    let p = b.acquire(&key, 0.0, 0.5).unwrap();
                    out.push((k, p));
                    tick += 1;
                    let m = model.iter_mut().find(|m| m.0 == k).unwrap();
                    m.1 = tick;
                    m.2 += 1;
                }
                let mut want: Vec<String> = model.iter().map(|m| format!("k{}", m.0)).collect();
                want.sort();
                let have: Vec<String> = b.snapshot(0.0).into_iter().map(|s| s.key).collect();
                prop_assert_eq!(have, want);
            }
        }
    }

    proptest! {
        /// However results interleave with time, no more than
        /// halfOpenProbes probe permits are ever out at once, and no permit
        /// at all is granted while open. A call refused while half-open
        /// waits, and no waiter is ever stranded: calls wait only while every
        /// probe slot is taken, and each is released once, in queue order.
        #[test]
        fn half_open_never_lets_more_than_the_probes_through(
            probes in 1..4u32,
            consecutive in prop::option::of(1..4u32),
            ops in prop::collection::vec(prop_oneof![
                2 => (0.0..3000.0f64).prop_map(Op::Advance),
                4 => Just(Op::Acquire),
                4 => (any::<usize>(), 0..3u8).prop_map(|(i, s)| Op::Record(i, s)),
                1 => any::<usize>().prop_map(Op::Leave),
            ], 1..300),
        ) {
            let mut b = Breakers::new(BreakerConfig {
                min_samples: 3,
                consecutive_failures: consecutive,
                open_ms: 1000.0,
                max_open_ms: 4000.0,
                half_open_probes: probes,
                ..BreakerConfig::default()
            });
            let mut now = 0.0;
            let mut out: Vec<Permit> = Vec::new();
            let mut waiting: Vec<ProbeWaiter> = Vec::new();
            for op in ops {
                match op {
                    Op::Advance(dt) => now += dt,
                    Op::Acquire => {
                        let before = b.state(K, now);
                        match b.acquire(K, now, 0.5) {
                            Ok(p) => {
                                prop_assert_ne!(before, State::Open);
                                prop_assert_eq!(p == Permit::Probe, before == State::HalfOpen);
                                out.push(p);
                            }
                            Err(wait) => {
                                prop_assert_ne!(before, State::Closed);
                                prop_assert!((0.0..=4000.0).contains(&wait));
                                let id = b.wait(K);
                                prop_assert_eq!(id.is_some(), before == State::HalfOpen);
                                waiting.extend(id);
                            }
                        }
                    }
                    Op::Record(i, s) if !out.is_empty() => {
                        let p = out.swap_remove(i % out.len());
                        let sample = [Sample::Success, Sample::Failure, Sample::Ignored][usize::from(s)];
                        b.record(K, p, sample, now);
                    }
                    Op::Leave(i) if !waiting.is_empty() => {
                        let id = waiting.remove(i % waiting.len());
                        b.stop_waiting(K, id);
                    }
                    Op::Record(..) | Op::Leave(_) => {}
                }
                // Released: each a caller still waiting, in queue order.
                let released = b.drain_released();
                let expected: Vec<ProbeWaiter> =
                    waiting.iter().copied().filter(|w| released.contains(w)).collect();
                prop_assert_eq!(&released, &expected);
                waiting.retain(|w| !released.contains(w));
                prop_assert_eq!(b.waiting(), waiting.len());
                let probes_out = out.iter().filter(|p| **p == Permit::Probe).count();
                prop_assert!(probes_out <= probes as usize, "{} probes out", probes_out);
                if !waiting.is_empty() {
                    prop_assert_eq!(b.state(K, now), State::HalfOpen, "waiting on a decided key");
                    prop_assert!(probes_out >= probes as usize, "waiting beside a free probe slot");
                }
            }
        }
    }

    fn adaptive() -> BreakerConfig {
        BreakerConfig {
            min_samples: 4,
            adaptive_k: Some(2.0),
            ..BreakerConfig::default()
        }
    }

    #[test]
    fn adaptive_sheds_in_proportion_and_never_opens() {
        let mut b = Breakers::new(adaptive());
        // Below minSamples nothing is shed, whatever the coin.
        for _ in 0..3 {
            let p = b.acquire(K, 0.0, 0.0).unwrap();
            b.record(K, p, Sample::Failure, 0.0);
        }
        // 3 requests, 0 accepts: still under minSamples (4).
        assert_eq!(b.acquire(K, 0.0, 0.0), Ok(Permit::Normal));
        b.record(K, Permit::Normal, Sample::Failure, 0.0);
        // 4 requests, 0 accepts: p = 4/5. A coin under p is shed, above passes.
        assert_eq!(b.acquire(K, 0.0, 0.79), Err(0.0));
        // The shed call counted as a request: 5 requests, p = 5/6.
        assert_eq!(b.acquire(K, 0.0, 0.82), Err(0.0));
        assert_eq!(b.acquire(K, 0.0, 0.99), Ok(Permit::Normal));
        b.record(K, Permit::Normal, Sample::Failure, 0.0);
        assert!(
            changes(&mut b).is_empty(),
            "adaptive mode has no transitions"
        );
        assert_eq!(b.state(K, 0.0), State::Closed);
        assert_eq!(
            b.snapshot(0.0)[0].state,
            State::HalfOpen,
            "shedding shows as half-open"
        );
    }

    #[test]
    fn adaptive_lets_a_healthy_backend_through() {
        let mut b = Breakers::new(adaptive());
        // Half the calls fail: requests = 2 * accepts, so k = 2 sheds nothing.
        for i in 0..100 {
            let sample = if i % 2 == 0 {
                Sample::Success
            } else {
                Sample::Failure
            };
            assert!(call(&mut b, K, sample, f64::from(i)).is_ok());
        }
        assert_eq!(b.acquire(K, 100.0, 0.0), Ok(Permit::Normal));
        assert_eq!(b.snapshot(100.0)[0].state, State::Closed);
        // The window forgets: after it, nothing is shed.
        let mut b = Breakers::new(adaptive());
        for i in 0..20 {
            let _ = call(&mut b, K, Sample::Failure, f64::from(i));
        }
        assert_eq!(b.acquire(K, 20.0, 0.1), Err(0.0));
        assert_eq!(b.acquire(K, 70_000.0, 0.0), Ok(Permit::Normal));
    }

    #[test]
    fn forced_open_and_close_follow_another_tab() {
        let mut b = Breakers::new(cfg());
        b.force_open(K, 1000.0, 4000.0, 5000.0);
        assert_eq!(b.acquire(K, 2000.0, 0.5), Err(3000.0));
        assert_eq!(changes(&mut b), [(State::Closed, State::Open)]);
        // A shorter peer period does not shorten ours.
        b.force_open(K, 2000.0, 100.0, 5000.0);
        assert_eq!(b.acquire(K, 2500.0, 0.5), Err(2500.0));
        assert!(changes(&mut b).is_empty());
        // Half-open with time, then the peer's probe closes it.
        assert_eq!(b.acquire(K, 5000.0, 0.5), Ok(Permit::Probe));
        b.force_close(K, 5001.0);
        assert_eq!(b.state(K, 5001.0), State::Closed);
        assert_eq!(
            changes(&mut b),
            [
                (State::Open, State::HalfOpen),
                (State::HalfOpen, State::Closed)
            ]
        );
        // Our own probe's late result decides nothing now.
        b.record(K, Permit::Probe, Sample::Failure, 5002.0);
        assert_eq!(b.state(K, 5002.0), State::Closed);
        // Closing a closed or unknown key is a no-op.
        b.force_close("other", 0.0);
        assert!(changes(&mut b).is_empty());
    }

    // Runs of failures over the endpoints of one origin (`origin.rs`).

    const A: &str = "GET https://api.example/user";
    const B: &str = "GET https://api.example/orders";
    const C: &str = "GET https://api.example/stock";
    /// Another origin.
    const X: &str = "GET https://cdn.example/user";
    const F: Sample = Sample::Failure;
    const S: Sample = Sample::Success;

    /// A page load's burst under the defaults: two calls to each of A, B
    /// and C, all out before the first answer, every one failing.
    fn failed_burst(b: &mut Breakers, now: f64) {
        let keys = [A, A, B, B, C, C];
        let permits: Vec<Permit> = keys
            .iter()
            .map(|k| b.acquire(k, now, 0.5).unwrap())
            .collect();
        for (k, p) in keys.iter().zip(permits) {
            b.record(k, p, Sample::Failure, now + 1.0);
        }
    }

    #[test]
    fn an_endpoint_failing_alone_opens_on_its_own_count() {
        let mut b = Breakers::new(BreakerConfig::default());
        // A fails while B answers: no run spans two keys.
        for now in [0.0, 1.0] {
            call(&mut b, A, Sample::Failure, now).unwrap();
            call(&mut b, B, Sample::Success, now).unwrap();
        }
        assert_eq!(b.state(A, 1.0), State::Closed);
        call(&mut b, A, Sample::Failure, 2.0).unwrap();
        assert_eq!(
            (b.state(A, 2.0), b.state(B, 2.0)),
            (State::Open, State::Closed)
        );
        // An endpoint that keeps failing, then another's single failure: a
        // broken endpoint, not its origin down.
        let mut b = Breakers::new(BreakerConfig::default());
        for k in [A, A, A, B] {
            call(&mut b, k, F, 0.0).unwrap();
        }
        assert_eq!(
            (b.state(A, 0.0), b.state(B, 0.0)),
            (State::Open, State::Closed)
        );
        // Failures of two origins, or of keys without one, do not add up.
        let mut b = Breakers::new(BreakerConfig::default());
        for k in [A, X, A, X, "payments", "orders"] {
            call(&mut b, k, Sample::Failure, 0.0).unwrap();
        }
        for k in [A, X, "payments", "orders"] {
            assert_eq!(b.state(k, 0.0), State::Closed, "{k}");
        }
    }

    /// Calls to `calls`' keys all out at once, then their outcomes in
    /// that order.
    fn together(b: &mut Breakers, calls: &[(&str, Sample)], now: f64) {
        let permits: Vec<Permit> = calls
            .iter()
            .map(|(k, _)| b.acquire(k, now, 0.5).unwrap())
            .collect();
        for ((k, s), p) in calls.iter().zip(permits) {
            b.record(k, p, *s, now + 1.0);
        }
    }

    #[test]
    fn endpoints_failing_one_after_another_keep_their_own_counts() {
        // A loop over failing endpoints, each call sent after the last
        // failure came back: each key opens on its own count only.
        let mut b = Breakers::new(BreakerConfig::default());
        for k in [A, B, C] {
            for _ in 0..2 {
                call(&mut b, k, F, 0.0).unwrap();
            }
        }
        assert_eq!([A, B, C].map(|k| b.state(k, 0.0)), [State::Closed; 3]);
        call(&mut b, C, F, 0.0).unwrap();
        assert_eq!(
            [A, B, C].map(|k| b.state(k, 0.0)),
            [State::Closed, State::Closed, State::Open]
        );
    }

    #[test]
    fn a_burst_holds_its_endpoints_behind_one_probe() {
        let mut b = Breakers::new(BreakerConfig::default());
        failed_burst(&mut b, 0.0);
        // Nothing opened: each endpoint failed twice in its own row.
        for k in [A, B, C] {
            assert_eq!(b.state(k, 1.0), State::Closed, "{k}");
        }
        assert_eq!(b.opens(), 0);
        // Held, not before the probe's time.
        b.schedule_probe(A, 1.0, 500.0);
        b.schedule_probe(B, 1.0, 900.0);
        let burst = b.burst(B, 100.0).unwrap();
        assert_eq!(
            (burst.probing, burst.probe_in_ms, burst.lost),
            (false, 401.0, 0)
        );
        assert_eq!(b.acquire(B, 100.0, 0.5), Err(0.0));
        assert_eq!(b.burst(X, 100.0), None, "another origin");
        // At its time one call goes as the origin's probe; the burst's
        // other calls wait for it.
        assert_eq!(b.acquire(C, 501.0, 0.5), Ok(Permit::Origin));
        let mut waiters = Vec::new();
        for k in [A, B, C] {
            assert!(b.burst(k, 501.0).unwrap().probing, "{k}");
            assert_eq!(b.acquire(k, 501.0, 0.5), Err(0.0), "{k}");
            waiters.push(b.wait(k).unwrap());
        }
        // It fails: counted, the waiters ask again, the next probe waits
        // for its own time.
        b.record(C, Permit::Origin, F, 600.0);
        let mut released = b.drain_released();
        released.sort_unstable();
        assert_eq!(released, waiters);
        // C failed a third time in its own row: its own breaker opens
        // (and so it is not held: its own probe decides for it).
        assert_eq!(b.state(C, 600.0), State::Open);
        b.schedule_probe(A, 600.0, 1000.0);
        let burst = b.burst(A, 600.0).unwrap();
        assert_eq!(
            (burst.probing, burst.probe_in_ms, burst.lost),
            (false, 1000.0, 1)
        );
        // The next probe succeeds: the burst is over, nothing is held.
        let p = b.acquire(A, 1600.0, 0.5).unwrap();
        assert_eq!(p, Permit::Origin);
        let w = b.wait(B).unwrap();
        b.record(A, p, S, 1650.0);
        assert_eq!(b.drain_released(), [w]);
        for k in [A, B] {
            assert_eq!(b.burst(k, 1650.0), None, "{k}");
            assert_eq!(b.acquire(k, 1650.0, 0.5), Ok(Permit::Normal), "{k}");
        }
        assert_eq!(b.opens(), 1, "C, by its own row only");
    }

    #[test]
    fn a_burst_probe_abandoned_frees_the_next_and_an_endpoint_outside_it_is_never_held() {
        let mut b = Breakers::new(BreakerConfig::default());
        failed_burst(&mut b, 0.0);
        let p = b.acquire(A, 10.0, 0.5).unwrap();
        assert_eq!(p, Permit::Origin);
        let w = b.wait(B).unwrap();
        // An abort or the deadline: the probe decided nothing, the waiter
        // asks again and becomes the next probe; nothing was lost.
        b.record(A, p, Sample::Ignored, 20.0);
        assert_eq!(b.drain_released(), [w]);
        assert_eq!(b.burst(B, 20.0).unwrap().lost, 0);
        assert_eq!(b.acquire(B, 20.0, 0.5), Ok(Permit::Origin));
        // D, of the same origin, failed alone after the burst (sent after
        // its failures came back): not held, its calls go.
        const D: &str = "GET https://api.example/search";
        assert_eq!(call(&mut b, D, F, 21.0), Ok(Permit::Normal));
        assert_eq!(b.burst(D, 21.0), None);
        assert_eq!(b.acquire(D, 22.0, 0.5), Ok(Permit::Normal));
        // Evicting the key that holds the probe frees the burst's waiters.
        let mut b = Breakers::with_capacity_limit(BreakerConfig::default(), 3);
        failed_burst(&mut b, 0.0);
        let _probe = b.acquire(A, 10.0, 0.5).unwrap();
        let w = b.wait(B).unwrap();
        let _ = b.acquire(X, 10.0, 0.5);
        assert!(b.drain_released().contains(&w));
        assert_eq!(b.acquire(B, 10.0, 0.5), Err(0.0), "A's probe is still out");
    }

    #[test]
    fn a_probe_out_when_its_burst_ended_is_the_next_bursts_one_probe() {
        // The proptest's case (proptest-regressions/policy/breaker.txt),
        // shrunk by hand.
        const D: &str = "GET https://api.example/search";
        const E: &str = "GET https://api.example/cart";
        const G: &str = "GET https://api.example/items";
        let mut b = Breakers::new(BreakerConfig::default());
        failed_burst(&mut b, 0.0);
        let p = b.acquire(A, 10.0, 0.5).unwrap();
        assert_eq!(p, Permit::Origin);
        // D, outside the burst, answers: the burst is over, A's probe is
        // still out.
        call(&mut b, D, S, 11.0).unwrap();
        assert_eq!(b.burst(B, 11.0), None);
        // A second burst over other endpoints of the origin, its probe's
        // time come: it waits for A's, one probe at a time per origin.
        together(
            &mut b,
            &[(D, F), (D, F), (E, F), (E, F), (G, F), (G, F)],
            20.0,
        );
        assert_eq!(b.acquire(E, 22.0, 0.5), Err(0.0), "two origin probes out");
        assert!(b.burst(E, 22.0).unwrap().probing);
        let w = b.wait(E).unwrap();
        // A's probe decides nothing (aborted): the waiter asks again and
        // goes as the one probe; A's return freed no second one.
        b.record(A, p, Sample::Ignored, 30.0);
        assert_eq!(b.drain_released(), [w]);
        assert_eq!(b.acquire(E, 30.0, 0.5), Ok(Permit::Origin));
        assert_eq!(b.acquire(G, 30.0, 0.5), Err(0.0));
        assert!(b.wait(G).is_some());
    }

    #[test]
    fn a_success_anywhere_on_the_origin_ends_the_burst() {
        let mut b = Breakers::new(BreakerConfig::default());
        together(&mut b, &[(A, F), (B, F), (C, S), (A, F), (B, F)], 0.0);
        // Four failures over A and B, twice each, but C answered between:
        // an overload, not a blip.
        for k in [A, B, C] {
            assert_eq!(b.burst(k, 1.0), None, "{k}");
        }
        // A burst that all failed is held, until an answer anywhere on the
        // origin ends it.
        let mut b = Breakers::new(BreakerConfig::default());
        failed_burst(&mut b, 10.0);
        assert!(b.burst(B, 11.0).is_some() && b.burst(C, 11.0).is_some());
        // An answer anywhere on the origin ends it.
        call(&mut b, X, S, 12.0).unwrap();
        assert!(b.burst(B, 12.0).is_some(), "another origin's answer");
        let p = b.acquire(B, 12.0, 0.5).unwrap();
        b.record(B, p, S, 13.0);
        assert_eq!(b.burst(C, 13.0), None);
        // Off with the consecutive rule.
        let mut b = Breakers::new(BreakerConfig {
            consecutive_failures: None,
            ..BreakerConfig::default()
        });
        failed_burst(&mut b, 0.0);
        assert_eq!(b.burst(A, 1.0), None);
    }

    #[test]
    fn half_open_endpoints_that_failed_together_probe_one_at_a_time() {
        // A, B and C failed together, three times each: each opened on its
        // own row (a page load deep in an outage).
        let mut b = Breakers::new(BreakerConfig::default());
        let row: Vec<(&str, Sample)> = [A, B, C].iter().flat_map(|k| [(*k, F); 3]).collect();
        together(&mut b, &row, 0.0);
        for k in [A, B, C] {
            assert_eq!(b.state(k, 1.0), State::Open, "{k}");
        }
        // All three half-open: A's probe goes for the origin, B and C wait
        // for it (before: three probes, one per endpoint).
        let p = b.acquire(A, 3000.0, 0.5).unwrap();
        assert_eq!(p, Permit::Probe);
        for k in [B, C] {
            assert_eq!(b.acquire(k, 3000.0, 0.5), Err(0.0), "{k}");
        }
        let waiters: Vec<ProbeWaiter> = [B, C].iter().map(|k| b.wait(k).unwrap()).collect();
        // It fails: B and C are open again (their period, not doubled) and
        // their waiters are refused without sending.
        b.record(A, p, F, 3001.0);
        assert_eq!(b.drain_released(), waiters);
        for k in [A, B, C] {
            assert_eq!(b.state(k, 3002.0), State::Open, "{k}");
            assert!(b.acquire(k, 3002.0, 0.5).is_err(), "{k}");
        }
        assert_eq!(b.open_info(B, 3001.0), Some((2000.0, 2000.0)));
        // Another origin's endpoint is not held by them.
        call(&mut b, X, S, 3002.0).unwrap();
        // Next round, A's probe succeeds: B and C probe for themselves.
        let p = b.acquire(A, 5002.0, 0.5).unwrap();
        assert_eq!(b.acquire(B, 5002.0, 0.5), Err(0.0));
        let w = b.wait(B).unwrap();
        b.record(A, p, S, 5003.0);
        assert_eq!(b.state(A, 5003.0), State::Closed);
        assert!(b.drain_released().contains(&w));
        for k in [B, C] {
            let p = b.acquire(k, 5004.0, 0.5).unwrap();
            assert_eq!(p, Permit::Probe, "{k}");
            b.record(k, p, S, 5005.0);
            assert_eq!(b.state(k, 5005.0), State::Closed, "{k}");
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        Advance(f64),
        /// A call to the key at this index.
        Call(usize),
        /// Reports the permit at this index (mod the permits out).
        Record(usize, u8),
        /// The waiting call at this index (mod the calls waiting) leaves.
        Leave(usize),
    }

    proptest! {
        /// Over the endpoints of one origin (and one of another), however
        /// results interleave: no permit while open; at most one origin
        /// probe out per burst; no key opens but by its own row; and no
        /// call is left waiting without a probe to wait for.
        #[test]
        fn a_burst_probes_once_and_strands_no_waiter(
            ops in prop::collection::vec(prop_oneof![
                2 => (0.0..3000.0f64).prop_map(Step::Advance),
                4 => (0..4usize).prop_map(Step::Call),
                4 => (any::<usize>(), 0..3u8).prop_map(|(i, s)| Step::Record(i, s)),
                1 => any::<usize>().prop_map(Step::Leave),
            ], 1..300),
        ) {
            let keys = [A, B, C, X];
            let mut b = Breakers::new(BreakerConfig::default());
            let mut now = 0.0;
            let mut out: Vec<(&str, Permit)> = Vec::new();
            let mut waiting: Vec<(&str, ProbeWaiter)> = Vec::new();
            for op in ops {
                match op {
                    Step::Advance(dt) => now += dt,
                    Step::Call(k) => {
                        let key = keys[k];
                        let before = b.state(key, now);
                        match b.acquire(key, now, 0.5) {
                            Ok(p) => {
                                prop_assert_ne!(before, State::Open);
                                out.push((key, p));
                            }
                            Err(_) => waiting.extend(b.wait(key).map(|id| (key, id))),
                        }
                    }
                    Step::Record(i, s) if !out.is_empty() => {
                        let (key, p) = out.swap_remove(i % out.len());
                        let sample = [Sample::Success, Sample::Failure, Sample::Ignored][usize::from(s)];
                        b.record(key, p, sample, now);
                        if sample == Sample::Failure {
                            b.schedule_probe(key, now, 500.0);
                        }
                    }
                    Step::Leave(i) if !waiting.is_empty() => {
                        let (key, id) = waiting.remove(i % waiting.len());
                        b.stop_waiting(key, id);
                    }
                    Step::Record(..) | Step::Leave(_) => {}
                }
                let origin_probes = out.iter().filter(|(k, p)| *p == Permit::Origin && *k != X).count();
                prop_assert!(origin_probes <= 1, "two origin probes out");
                let released = b.drain_released();
                for id in &released {
                    prop_assert!(waiting.iter().any(|(_, w)| w == id), "released twice or unknown");
                }
                waiting.retain(|(_, w)| !released.contains(w));
                prop_assert_eq!(b.waiting(), waiting.len());
                for (key, _) in &waiting {
                    let own = b.state(key, now) == State::HalfOpen
                        && circuit(&mut b.circuits, key).unwrap().probes >= 1;
                    let origin = b.burst(key, now).is_some_and(|s| s.probing);
                    let sibling = b.state(key, now) == State::HalfOpen
                        && b.circuits.iter().any(|(_, c, _)| c.probes > 0);
                    prop_assert!(own || origin || sibling, "waiting with nothing to wait for");
                }
            }
            // Every open came from a key's own row of failures.
            prop_assert!(b.opens() <= b.circuits.len() as u64 * 300);
        }
    }
}
