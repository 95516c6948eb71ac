#![cfg(not(target_arch = "wasm32"))]
//! Virtual-time retry-storm simulation over the public policy API.
//!
//! 1000 clients (one set of policies each, as one client per browser tab)
//! call an API once a second, open loop: a call starts on schedule whatever
//! happened to the previous one. The server serves up to `CAPACITY` attempts
//! a second, then fails every attempt (connection refused or 503) for 30 s,
//! then recovers. Each call is driven through the policy core's call state
//! machine, `policy::guard::Guard`, the same code the wasm engine asks at
//! every step (admit, slot, begin, settle): what holds here holds for the
//! shipped loop, not for a copy of it.
//!
//! The number that matters is attempts per call during the outage: what a
//! failing backend receives compared with its normal load.
#![allow(clippy::indexing_slicing, clippy::unwrap_used)]

use std::fmt::Write as _;

use stormguard::policy::classify::RetryDenied;
use stormguard::policy::guard::{Attempt, CallState, Ended, Guard, Spec, Verdict};
use stormguard::policy::options::ClientConfig;
use stormguard::policy::raw_options::{RawBreaker, RawClientOptions, Toggle};
use stormguard::policy::stats::Stats;

mod common;
use common::sim::{admit_and_slot, settle, spec, Queue, Rng, Step, Waiting};

const CLIENTS: usize = 1000;
const PERIOD_MS: f64 = 1000.0;
const CAPACITY: u32 = 1500;
const OUTAGE_START_S: usize = 20;
const OUTAGE_END_S: usize = 50;
const END_S: usize = 90;
const KEY: &str = "GET https://api.example/items";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reply {
    Ok,
    Unavailable,
    Refused,
}

impl Reply {
    /// How the attempt ended, for the policy core.
    fn ended(self) -> Ended<'static> {
        match self {
            Reply::Ok => Ended::Success,
            Reply::Unavailable => Ended::Status {
                status: 503,
                retry_after: None,
                reset_ms: None,
            },
            Reply::Refused => Ended::Network { offline: false },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Call(usize),
    Attempt(usize),
    Reply(usize, Reply),
}

struct Call {
    client: usize,
    started_s: usize,
    state: CallState<'static>,
    /// The attempt in flight.
    sent: Option<Attempt>,
}

#[derive(Default)]
struct Report {
    /// Calls started and attempts sent during the outage.
    outage: Stats,
    peak_attempts_per_s: u32,
    breaker_opens: u64,
    /// Seconds after the outage until >= 95% of the calls started in a second succeed.
    recovery_s: Option<usize>,
    /// Attempts reaching the server in each second of the fault.
    fault_attempts_per_s: Vec<u32>,
    /// Calls that succeeded, of those started during the fault.
    fault_ok: u32,
}

/// What happens to the server between OUTAGE_START_S and OUTAGE_END_S.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// Every attempt fails.
    Outage,
    /// Capacity drops to this many attempts a second; the excess gets 503.
    Brownout(u32),
}

struct Sim {
    fault: Fault,
    /// Every call's spec: a GET of one endpoint with the client's settings.
    spec: &'static Spec,
    /// One per client, as one client per browser tab.
    clients: Vec<Guard>,
    calls: Vec<Call>,
    events: Queue<Event>,
    rng: Rng,
    attempts_per_s: Vec<u32>,
    calls_per_s: Vec<u32>,
    ok_per_s: Vec<u32>,
    outage: Stats,
    /// Calls waiting for a half-open probe.
    waiting: Waiting,
}

fn second(now_ms: f64) -> usize {
    (now_ms / 1000.0) as usize
}

fn in_outage(now_ms: f64) -> bool {
    (OUTAGE_START_S..OUTAGE_END_S).contains(&second(now_ms))
}

impl Sim {
    fn new(cfg: ClientConfig, fault: Fault) -> Self {
        let clients = (0..CLIENTS).map(|_| Guard::new(&cfg)).collect();
        Self {
            fault,
            spec: spec(KEY.to_string(), &cfg),
            clients,
            calls: Vec::new(),
            events: Queue::new(),
            rng: Rng(0x9E37_79B9_7F4A_7C15),
            attempts_per_s: vec![0; END_S + 60],
            calls_per_s: vec![0; END_S + 60],
            ok_per_s: vec![0; END_S + 60],
            outage: Stats::default(),
            waiting: Waiting::default(),
        }
    }

    fn at(&mut self, time_ms: f64, event: Event) {
        self.events.at(time_ms, event);
    }

    fn run(mut self) -> Report {
        for c in 0..CLIENTS {
            let t = self.rng.between(0.0, PERIOD_MS);
            self.at(t, Event::Call(c));
        }
        while let Some((now, event)) = self.events.next() {
            match event {
                Event::Call(c) => self.call(c, now),
                Event::Attempt(id) => self.attempt(id, now),
                Event::Reply(id, reply) => self.reply(id, reply, now),
            }
        }
        let recovery_s = (OUTAGE_END_S..END_S)
            .find(|&s| f64::from(self.ok_per_s[s]) >= 0.95 * f64::from(self.calls_per_s[s]))
            .map(|s| s - OUTAGE_END_S);
        Report {
            outage: self.outage,
            peak_attempts_per_s: self.attempts_per_s[OUTAGE_START_S..OUTAGE_END_S]
                .iter()
                .copied()
                .max()
                .unwrap_or(0),
            breaker_opens: self.clients.iter().map(|g| g.stats.breaker_opens).sum(),
            recovery_s,
            fault_attempts_per_s: self.attempts_per_s[OUTAGE_START_S..OUTAGE_END_S].to_vec(),
            fault_ok: self.ok_per_s[OUTAGE_START_S..OUTAGE_END_S].iter().sum(),
        }
    }

    fn call(&mut self, client: usize, now: f64) {
        if second(now) >= END_S {
            return;
        }
        let next = now + PERIOD_MS * self.rng.between(0.9, 1.1);
        self.at(next, Event::Call(client));
        self.calls_per_s[second(now)] += 1;
        if in_outage(now) {
            self.outage.requests += 1;
        }
        let state = self.clients[client].start(self.spec, now);
        self.calls.push(Call {
            client,
            started_s: second(now),
            state,
            sent: None,
        });
        self.attempt(self.calls.len() - 1, now);
    }

    /// The engine's steps before an attempt: admit (again after a wait), a
    /// slot, begin.
    fn attempt(&mut self, id: usize, now: f64) {
        let coin = self.rng.next();
        let call = &mut self.calls[id];
        let client = call.client;
        let guard = &mut self.clients[client];
        let permit = match admit_and_slot(
            guard,
            &mut call.state,
            (client, id),
            &mut self.waiting,
            now,
            coin,
        ) {
            Step::Send(permit) => permit,
            Step::Wait { ms, .. } => return self.at(now + ms, Event::Attempt(id)),
            // Asks again when the probe's outcome releases it.
            Step::AwaitProbe => return,
            // Refused (open breaker) or out of time: the call ends unsent.
            Step::Stop(_) => return,
            // One call a second and attempts under 100 ms: never 6 in flight.
            Step::Queued | Step::Full => unreachable!("a slot is always free"),
        };
        let Some(sent) = guard.begin(&mut call.state, permit, now) else {
            let _ = guard.release_slot();
            return self.wake(client, now);
        };
        call.sent = Some(sent);
        self.attempts_per_s[second(now)] += 1;
        if in_outage(now) {
            self.outage.attempts += 1;
        }
        let capacity = match self.fault {
            Fault::Brownout(c) if in_outage(now) => c,
            _ => CAPACITY,
        };
        let (reply, latency) = if in_outage(now) && self.fault == Fault::Outage {
            if self.rng.next() < 0.5 {
                (Reply::Refused, self.rng.between(5.0, 25.0))
            } else {
                (Reply::Unavailable, self.rng.between(20.0, 60.0))
            }
        } else if self.attempts_per_s[second(now)] > capacity {
            (Reply::Unavailable, self.rng.between(20.0, 60.0))
        } else {
            (Reply::Ok, self.rng.between(30.0, 80.0))
        };
        self.at(now + latency, Event::Reply(id, reply));
    }

    /// A probe came back or the key changed state: its waiters ask again,
    /// in queue order.
    fn wake(&mut self, client: usize, now: f64) {
        for call in self.waiting.released(client, &mut self.clients[client]) {
            self.at(now, Event::Attempt(call));
        }
    }

    /// The attempt's answer, settled by the policy core.
    fn reply(&mut self, id: usize, reply: Reply, now: f64) {
        let rand01 = self.rng.next();
        let call = &mut self.calls[id];
        let client = call.client;
        let guard = &mut self.clients[client];
        let _ = guard.release_slot();
        let end = reply.ended();
        let verdict = settle(guard, &mut call.state, &mut call.sent, &end, now, rand01);
        self.wake(client, now);
        let call = &self.calls[id];
        match verdict {
            Verdict::End => self.ok_per_s[call.started_s] += 1,
            Verdict::Retry { delay_ms } => {
                if in_outage(now) {
                    self.outage.retries += 1;
                }
                self.at(now + delay_ms, Event::Attempt(id));
            }
            Verdict::Fail {
                denied: RetryDenied::Budget,
            } if in_outage(now) => self.outage.budget_denied += 1,
            Verdict::Fail { .. } => {}
        }
    }
}

fn on_or_off<T>(on: bool) -> Toggle<T> {
    if on {
        Toggle::Default
    } else {
        Toggle::Off
    }
}

fn simulate(budget: bool, breaker: bool) -> Report {
    let cfg = ClientConfig::from_raw(&RawClientOptions {
        budget: on_or_off(budget),
        breaker: on_or_off(breaker),
        ..RawClientOptions::default()
    })
    .unwrap();
    Sim::new(cfg, Fault::Outage).run()
}

#[test]
fn outage_amplification_with_defaults_and_without_protection() {
    let mut out = String::new();
    writeln!(
        out,
        "{CLIENTS} clients x 1 call/s, server capacity {CAPACITY}/s, down from {OUTAGE_START_S}s to {OUTAGE_END_S}s"
    ).unwrap();
    writeln!(out, "config                      attempts/call  peak attempts/s  retries  budget denied  breaker opens  recovered after").unwrap();
    let mut figures = Vec::new();
    for (name, budget, breaker) in [
        ("defaults (budget+breaker)", true, true),
        ("budget, no breaker", true, false),
        ("breaker, no budget", false, true),
        ("retries only", false, false),
    ] {
        let r = simulate(budget, breaker);
        let amplification = r.outage.amplification();
        writeln!(
            out,
            "{name:<27} {amplification:>13.3}  {:>15}  {:>7}  {:>13}  {:>13}  {}",
            r.peak_attempts_per_s,
            r.outage.retries,
            r.outage.budget_denied,
            r.breaker_opens,
            r.recovery_s
                .map_or("never".to_owned(), |s| format!("{s} s")),
        )
        .unwrap();
        figures.push(amplification);
    }
    print!("{out}");
    assert!(
        figures[0] <= 1.15,
        "defaults: {} attempts per call",
        figures[0]
    );
    assert!(
        figures[3] > 2.5,
        "retries only: {} attempts per call",
        figures[3]
    );
}

/// Coefficient of variation: how much a series swings around its mean.
fn swing(series: &[u32]) -> f64 {
    let n = series.len() as f64;
    let mean = series.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = series
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n;
    var.sqrt() / mean
}

#[test]
fn adaptive_throttling_sheds_a_brownout_smoothly() {
    let mut out = String::new();
    // Capacity drops to 30 % of normal load for 30 s.
    let brownout = Fault::Brownout(CAPACITY * 3 / 10);
    // The binary breaker adaptive throttling was built to replace: the
    // failure rate alone, open 5 s doubling to 30 s, so whole cohorts of
    // clients open and close together. (The defaults since issue 15 open
    // after 3 failures in a row and probe every 2 s: printed for comparison.)
    let rate_only = || RawBreaker {
        consecutive_failures: Toggle::Off,
        open_ms: Some(5000.0),
        max_open_ms: Some(30_000.0),
        ..RawBreaker::default()
    };
    let run = |breaker: RawBreaker| {
        let raw = RawClientOptions {
            breaker: Toggle::On(breaker),
            ..RawClientOptions::default()
        };
        Sim::new(ClientConfig::from_raw(&raw).unwrap(), brownout).run()
    };
    writeln!(
        out,
        "brownout to {} attempts/s for {}s, {CLIENTS} clients x 1 call/s",
        CAPACITY * 3 / 10,
        OUTAGE_END_S - OUTAGE_START_S
    )
    .unwrap();
    writeln!(
        out,
        "breaker                       attempts/call  swing of attempts/s  min..max attempts/s  calls answered"
    )
    .unwrap();
    let mut swings = Vec::new();
    for (name, breaker) in [
        ("binary, rate only, 5-30 s", rate_only()),
        (
            "adaptive",
            RawBreaker {
                mode: Some("adaptive".to_owned()),
                ..RawBreaker::default()
            },
        ),
        ("binary, defaults", RawBreaker::default()),
    ] {
        let r = run(breaker);
        let series = &r.fault_attempts_per_s[5..]; // after the first reactions
        let (lo, hi) = (series.iter().min().unwrap(), series.iter().max().unwrap());
        let calls = r.outage.requests;
        writeln!(
            out,
            "{name:<28} {:>14.3}  {:>19.3}  {:>9}..{:<9}  {:>6.1} %",
            r.outage.amplification(),
            swing(series),
            lo,
            hi,
            100.0 * f64::from(r.fault_ok) / calls as f64,
        )
        .unwrap();
        swings.push(swing(series));
    }
    print!("{out}");
    assert!(
        swings[1] < swings[0],
        "adaptive throttling swings {} vs the rate-only binary breaker's {}",
        swings[1],
        swings[0]
    );
}

/// Probe-first retries (issue 42): one client, calls to several endpoints
/// of one origin, each driven through the shipped `Guard` in virtual time
/// as the engine drives it (admit and its waits, slot, begin, settle).
mod burst {
    use super::*;
    use stormguard::policy::breaker::Permit;
    use stormguard::policy::guard::Stop;
    use stormguard::policy::ratelimit::Why;

    /// The scenario's server: the reply to the `nth` attempt (from 1) at
    /// endpoint `e`, sent at `now`.
    pub type Server = Box<dyn FnMut(usize, u32, f64) -> Reply>;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum End {
        Ok,
        /// Failed with the last attempt's error (not retried because of this).
        Failed(RetryDenied),
        /// CircuitOpenError, nothing more sent.
        Refused,
        OutOfTime,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Ev {
        Attempt(usize),
        Reply(usize, Reply),
    }

    pub struct Call {
        pub endpoint: usize,
        state: CallState<'static>,
        sent: Option<Attempt>,
        pub end: Option<End>,
        /// When each of its attempts went out.
        pub sent_at: Vec<f64>,
        /// Times it was held by its origin's burst (waited for the probe,
        /// or for its time).
        pub held: u32,
    }

    pub struct Page {
        pub guard: Guard,
        specs: Vec<&'static Spec>,
        pub calls: Vec<Call>,
        events: Queue<Ev>,
        rng: Rng,
        /// The calls waiting for a probe (client 0: the page's one guard).
        pub waiting: Waiting,
        tries: Vec<u32>,
        server: Server,
    }

    impl Page {
        pub fn new(raw: RawClientOptions, endpoints: usize, server: Server) -> Page {
            let raw = RawClientOptions {
                concurrency: Toggle::Off,
                ..raw
            };
            let cfg = ClientConfig::from_raw(&raw).unwrap();
            let specs = (0..endpoints)
                .map(|e| spec(format!("GET https://api.example/e{e}"), &cfg))
                .collect();
            Page {
                guard: Guard::new(&cfg),
                specs,
                calls: Vec::new(),
                events: Queue::new(),
                rng: Rng(0x9E37_79B9_7F4A_7C15),
                waiting: Waiting::default(),
                tries: vec![0; endpoints],
                server,
            }
        }

        fn at(&mut self, time_ms: f64, ev: Ev) {
            self.events.at(time_ms, ev);
        }

        /// A call to endpoint `e` starting at `t`.
        pub fn call(&mut self, e: usize, t: f64) -> usize {
            let state = self.guard.start(self.specs[e], t);
            self.calls.push(Call {
                endpoint: e,
                state,
                sent: None,
                end: None,
                sent_at: Vec::new(),
                held: 0,
            });
            let id = self.calls.len() - 1;
            self.at(t, Ev::Attempt(id));
            id
        }

        /// A page's burst at `t`: two calls to each of endpoints 0, 1, 2.
        pub fn burst(&mut self, t: f64) {
            for e in [0, 0, 1, 1, 2, 2] {
                self.call(e, t);
            }
        }

        /// Runs until `until` (or no event is left).
        pub fn run(&mut self, until: f64) {
            while let Some((now, ev)) = self.events.next_by(until) {
                match ev {
                    Ev::Attempt(id) => self.attempt(id, now),
                    Ev::Reply(id, r) => self.reply(id, r, now),
                }
            }
        }

        fn attempt(&mut self, id: usize, now: f64) {
            let coin = self.rng.next();
            let call = &mut self.calls[id];
            let permit = match admit_and_slot(
                &mut self.guard,
                &mut call.state,
                (0, id),
                &mut self.waiting,
                now,
                coin,
            ) {
                Step::Send(permit) => permit,
                Step::Wait { ms, why } => {
                    call.held += u32::from(why == Why::Burst);
                    return self.at(now + ms, Ev::Attempt(id));
                }
                Step::AwaitProbe => {
                    // Within its deadline: a timer ends the wait.
                    call.held += 1;
                    return;
                }
                Step::Stop(Stop::CircuitOpen { .. }) => {
                    call.end = Some(End::Refused);
                    return self.guard.retry_unsent(&mut call.state);
                }
                Step::Stop(_) => {
                    call.end = Some(End::OutOfTime);
                    return self.guard.retry_unsent(&mut call.state);
                }
                // Concurrency off: a slot is always free.
                Step::Queued | Step::Full => unreachable!("concurrency is off"),
            };
            let Some(sent) = self.guard.begin(&mut call.state, permit, now) else {
                let _ = self.guard.release_slot();
                self.calls[id].end = Some(End::OutOfTime);
                return self.wake(now);
            };
            call.sent = Some(sent);
            call.sent_at.push(now);
            let e = call.endpoint;
            self.tries[e] += 1;
            let reply = (self.server)(e, self.tries[e], now);
            let latency = self.rng.between(5.0, 25.0);
            self.at(now + latency, Ev::Reply(id, reply));
        }

        fn wake(&mut self, now: f64) {
            for id in self.waiting.released(0, &mut self.guard) {
                self.at(now, Ev::Attempt(id));
            }
        }

        /// The call `id`, waiting for a probe, is aborted.
        pub fn abort(&mut self, id: usize) {
            if let Some(i) = self.waiting.probes.iter().position(|p| p.2 == id) {
                let (_, w, _) = self.waiting.probes.remove(i);
                self.guard.stop_waiting(&self.calls[id].state, w);
            }
            self.calls[id].end = Some(End::OutOfTime);
        }

        /// The call whose attempt out is its origin's probe.
        pub fn probe_out(&self) -> Option<usize> {
            self.calls
                .iter()
                .position(|c| c.sent.is_some_and(|s| s.permit == Some(Permit::Origin)))
        }

        /// The caller of `id` aborts while its attempt is out.
        pub fn cancel(&mut self, id: usize, now: f64) {
            let _ = self.guard.release_slot();
            let call = &mut self.calls[id];
            let g = &mut self.guard;
            let _ = settle(
                g,
                &mut call.state,
                &mut call.sent,
                &Ended::Cancelled,
                now,
                0.5,
            );
            call.end = Some(End::OutOfTime);
            self.wake(now);
        }

        fn reply(&mut self, id: usize, reply: Reply, now: f64) {
            if self.calls[id].end.is_some() {
                return; // aborted meanwhile
            }
            let rand01 = self.rng.next();
            let _ = self.guard.release_slot();
            let call = &mut self.calls[id];
            let g = &mut self.guard;
            match settle(
                g,
                &mut call.state,
                &mut call.sent,
                &reply.ended(),
                now,
                rand01,
            ) {
                Verdict::End => call.end = Some(End::Ok),
                Verdict::Retry { delay_ms } => self.at(now + delay_ms, Ev::Attempt(id)),
                Verdict::Fail { denied } => call.end = Some(End::Failed(denied)),
            }
            self.wake(now);
        }

        pub fn sent(&self) -> usize {
            self.calls.iter().map(|c| c.sent_at.len()).sum()
        }
    }

    /// A server that answers 200 when `up(e, nth, now)` holds, else 503.
    fn up_when(mut up: impl FnMut(usize, u32, f64) -> bool + 'static) -> Server {
        Box::new(move |e, nth, now| {
            if up(e, nth, now) {
                Reply::Ok
            } else {
                Reply::Unavailable
            }
        })
    }

    fn budget_off() -> RawClientOptions {
        RawClientOptions {
            budget: Toggle::Off,
            ..RawClientOptions::default()
        }
    }

    #[test]
    fn twenty_endpoints_each_failing_once_all_succeed() {
        // 20 calls to 20 endpoints of one origin, out at once; each
        // endpoint fails its first request (503) and is healthy after.
        // The rule this replaces opened them all: 0 of 20.
        let server = up_when(|_, nth, _| nth != 1);
        let mut p = Page::new(budget_off(), 20, server);
        for e in 0..20 {
            p.call(e, 0.0);
        }
        p.run(60_000.0);
        let ok = p.calls.iter().filter(|c| c.end == Some(End::Ok)).count();
        assert_eq!(
            ok,
            20,
            "{:?}",
            p.calls.iter().map(|c| c.end).collect::<Vec<_>>()
        );
        assert_eq!(p.sent(), 40, "one retry each");
        assert_eq!(p.guard.stats.breaker_opens, 0);
        // The burst's retries waited for the probe, and went spread out,
        // not all at once.
        let held = p.calls.iter().filter(|c| c.held > 0).count();
        let firsts: Vec<f64> = p.calls.iter().map(|c| c.sent_at[1]).collect();
        // The probe went when a first retry typically goes (full jitter
        // over 1 s: 500 ms), no retry before it; those drawn earlier
        // waited for it.
        let first = firsts.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            first >= 500.0 && held >= 5,
            "{held} held; retries sent at {firsts:?}"
        );
        let mut retried: Vec<f64> = p.calls.iter().map(|c| c.sent_at[1]).collect();
        retried.sort_by(f64::total_cmp);
        retried.dedup();
        assert!(retried.len() >= 15, "{retried:?}");
        assert!(
            retried[retried.len() - 1] - retried[0] > 200.0,
            "{retried:?}"
        );
        // Warmed by 100 successes first, with the default budget: the same.
        let server = up_when(|_, nth, _| nth != 6);
        let mut p = Page::new(RawClientOptions::default(), 20, server);
        for i in 0..100 {
            p.call(i % 20, f64::from(i as u32) * 10.0);
        }
        p.run(2000.0);
        for e in 0..20 {
            p.call(e, 2000.0);
        }
        p.run(60_000.0);
        assert!(p.calls.iter().all(|c| c.end == Some(End::Ok)));
    }

    #[test]
    fn a_fresh_endpoints_first_failure_after_a_burst_elsewhere_is_retried() {
        // Endpoints 0..3 are down (a broken feature): a page's burst of two
        // calls each fails. Then endpoint 3's first request meets one
        // connection reset: it is not held or opened, its retry goes.
        let server: Server = Box::new(|e, nth, _| match (e, nth) {
            (0..=2, _) | (3, 1) => Reply::Refused,
            _ => Reply::Ok,
        });
        let mut p = Page::new(budget_off(), 4, server);
        p.burst(0.0);
        p.run(100.0);
        let d = p.call(3, 100.0);
        p.run(60_000.0);
        assert_eq!(p.calls[d].end, Some(End::Ok));
        assert_eq!(p.calls[d].sent_at.len(), 2);
        assert_eq!(p.calls[d].held, 0);
        // And calls to it in the next 2 s all go.
        let later: Vec<usize> = (0..10)
            .map(|i| p.call(3, 60_000.0 + f64::from(i) * 200.0))
            .collect();
        p.run(120_000.0);
        assert!(later.iter().all(|&c| p.calls[c].end == Some(End::Ok)));
    }

    #[test]
    fn through_an_outage_only_probes_reach_the_backend_and_the_burst_holds_nothing_else() {
        // Every endpoint of the burst down for good; endpoint 3, which did
        // not fail in it, stays healthy. Budget off: the probes, not the
        // budget, keep the retries off the backend.
        let server = up_when(|e, _, _| e == 3);
        let mut p = Page::new(budget_off(), 4, server);
        p.burst(0.0);
        // The healthy endpoint, while the burst is held.
        let healthy: Vec<usize> = (0..5)
            .map(|i| p.call(3, 300.0 + f64::from(i) * 500.0))
            .collect();
        p.run(120_000.0);
        let burst = &p.calls[..6];
        // Each call's 3 attempts: one sent, the others sent as the
        // origin's probe or spent on a probe that failed.
        let sent: usize = burst.iter().map(|c| c.sent_at.len()).sum();
        assert!(sent <= 6 + 3, "{sent} attempts: the burst plus the probes");
        for c in burst {
            assert!(
                matches!(
                    c.end,
                    Some(End::Refused | End::Failed(RetryDenied::Attempts))
                ),
                "{:?}",
                c.end
            );
        }
        assert!(burst.iter().filter(|c| c.end == Some(End::Refused)).count() >= 3);
        for &h in &healthy {
            assert_eq!((p.calls[h].end, p.calls[h].held), (Some(End::Ok), 0));
        }
    }

    #[test]
    fn a_probe_aborted_passes_the_probe_on_at_once() {
        // The burst's endpoints down for 10 s. The first probe's caller
        // aborts while it is out: a waiter probes in its place at once,
        // and nobody counts the aborted probe as a failed attempt.
        let server = up_when(|_, _, now| now >= 10_000.0);
        let mut p = Page::new(budget_off(), 3, server);
        p.burst(0.0);
        let mut t = 0.0;
        while p.probe_out().is_none() {
            assert!(t < 10_000.0, "no probe went");
            t += 1.0;
            p.run(t);
        }
        let first = p.probe_out().unwrap();
        let waiting = p
            .calls
            .iter()
            .filter(|c| c.held > 0 && c.end.is_none())
            .count();
        assert!(waiting >= 1, "nobody waits for the probe");
        p.cancel(first, t);
        p.run(t);
        let next = p.probe_out().unwrap(); // a waiter probes at once
        assert_ne!(next, first);
        assert_eq!(p.calls[next].sent_at.last(), Some(&t));
        // A waiter that leaves (its abort, its deadline) is forgotten.
        let before = p.guard.probe_waiters();
        let w = p.waiting.probes.first().map(|&(_, _, id)| id).unwrap();
        p.abort(w);
        assert_eq!(p.guard.probe_waiters(), before - 1);
        p.run(120_000.0);
        assert!(p.calls.iter().all(|c| c.end.is_some()));
        assert_eq!(p.guard.probe_waiters(), 0);
    }

    #[test]
    fn the_mostly_working_endpoint_beside_failing_ones_is_never_refused_for_them() {
        // Endpoints 0..3 fail in bursts (down 600 ms of every second),
        // two calls each every 100 ms; endpoint 3 fails 1 call in 5, never
        // twice in a row, called every 100 ms (between the others' rounds).
        // 4 s of calls.
        let mut n3 = 0;
        let server: Server = Box::new(move |e, _, now| {
            if e == 3 {
                n3 += 1;
                return if n3 % 5 == 0 {
                    Reply::Refused
                } else {
                    Reply::Ok
                };
            }
            if now % 1000.0 < 600.0 {
                Reply::Unavailable
            } else {
                Reply::Ok
            }
        });
        let mut p = Page::new(RawClientOptions::default(), 4, server);
        for i in 0..40 {
            p.burst(f64::from(i) * 100.0);
            p.call(3, f64::from(i) * 100.0 + 50.0);
        }
        p.run(60_000.0);
        let refused = p
            .calls
            .iter()
            .filter(|c| c.endpoint == 3 && c.end == Some(End::Refused))
            .count();
        assert_eq!(refused, 0);
    }

    #[test]
    fn a_burst_that_partly_succeeds_is_an_overload_nothing_is_held() {
        // Half of the burst's calls answered: its retries follow the
        // ordinary budget and breakers, none waits for a probe.
        let mut k = 0;
        let server = up_when(move |_, _, now| {
            k += 1;
            now >= 10.0 || k % 2 != 0
        });
        let mut p = Page::new(budget_off(), 3, server);
        for e in [0, 0, 1, 1, 2, 2, 0, 1, 2] {
            p.call(e, 0.0);
        }
        p.run(60_000.0);
        assert!(p
            .calls
            .iter()
            .all(|c| c.held == 0 && c.end == Some(End::Ok)));
    }
}
