//! The storm benchmark's runs in virtual time through the policy core
//! (issue 42): the steady poller's short outages (3 s, 5 s), the 60 s
//! page-load outage and the brownouts whose server sheds, against the
//! bench's own server model.
//!
//! `tests/pagesim.rs` models the page-load profile with a backend that
//! serves so many requests a second; here the backend is the fault server's
//! capacity model (tests/server/README.md), as `bench/storm.mjs` sets it up
//! on this machine's scale (`FULL_SCALE` 0.25 on 2 cores): `c` slots of 50
//! ms behind a FIFO queue of `queue`, a 1 s gateway timeout (504, the work
//! goes on), 503 when the queue is full; an outage answers 503 at once; a
//! brownout keeps 30 % of the slots; the shedding server (`shed: 'early'`)
//! answers 503 for queued work that can no longer finish in time. The
//! profiles are `bench/storm.mjs`'s: the steady poller (one call a second
//! per client, one endpoint, random phases) and the page load (6 calls over
//! 3 endpoints every 10 s, stratified phases), both at 0.75 of capacity;
//! 8 s warm-up, the fault, 15 s of recovery. "none" is one attempt, no
//! breaker or budget. The metrics are `bench/storm-metrics.mjs`'s. A
//! client's calls to one URL (the poller's every call, a page's call to
//! the same path and query 10 s later) share one flight as the engine's
//! dedupe shares them: a call made while the one before is still out
//! (in its backoff, or queued at the server) joins it and gets its outcome.
//! Without that the steady brownouts came out 1.44-1.67x and 93.5-96.4 %
//! here against the bench's 1.09x and 99.8 % (3 s, server sheds).
//!
//! Each client is one `Guard` (one client per tab), each call driven as
//! the wasm engine drives it (admit, slot, begin, settle; probe waiters,
//! queued slots), as in `tests/pagesim.rs`.
#![allow(clippy::indexing_slicing, clippy::unwrap_used)]

use std::collections::VecDeque;

use stormguard::policy::breaker::Permit;
use stormguard::policy::guard::{Attempt, CallState, Guard, Spec, Verdict};
use stormguard::policy::options::ClientConfig;
use stormguard::policy::raw_options::{RawClientOptions, Toggle};

mod common;
use common::sim::{admit_and_slot, ended_with, settle, spec, Queue, Rng, Step, Waiting};

const ORIGIN: &str = "https://api.example";
const WARMUP: f64 = 8000.0;
const RECOVERY: f64 = 15_000.0;
const DEADLINE: f64 = 20_000.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Profile {
    Steady,
    PageLoad,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    Outage,
    Brownout,
    BrownoutShed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Fire(usize),
    Attempt(usize),
    /// A reply reaches the call: (call, attempt's serial, status).
    Reply(usize, u64, u16),
    /// A slot's work is done: the item.
    Done(usize),
    /// The gateway's timeout of an item.
    Gateway(usize),
}

struct Call {
    client: usize,
    start: f64,
    state: CallState<'static>,
    sent: Option<Attempt>,
    serial: u64,
    ok: Option<bool>,
    end: f64,
    /// Joined the identical call in flight (dedupe): its outcome.
    joined: Option<usize>,
}

/// A request at the server.
struct Item {
    call: usize,
    serial: u64,
    deadline: f64,
    answered: bool,
    queued: bool,
}

struct Server {
    slots: usize,
    service: f64,
    gateway: f64,
    queue: usize,
    busy: usize,
    q: VecDeque<usize>,
    live: usize,
    items: Vec<Item>,
}

struct Sim {
    profile: Profile,
    fault: Fault,
    fault_at: f64,
    fault_end: f64,
    total: f64,
    period: f64,
    specs: Vec<&'static Spec>,
    clients: Vec<Guard>,
    calls: Vec<Call>,
    events: Queue<Event>,
    serial: u64,
    rng: Rng,
    server: Server,
    arrivals: Vec<f64>,
    /// Arrivals sent while the key's breaker was not closed (probe load).
    tripped: Vec<f64>,
    /// Each arrival's attempt number and permit.
    kinds: Vec<(u32, Option<Permit>)>,
    /// Calls waiting for a probe's outcome or a slot.
    waiting: Waiting,
    /// Each client's calls in flight by spec (an identical GET joins one).
    flights: Vec<Vec<Option<usize>>>,
    dedupe: bool,
}

pub struct Figures {
    pub amplification: f64,
    pub peak: f64,
    pub peak_at_s: f64,
    pub recovery_s: Option<f64>,
    pub success: f64,
    pub probe_load: f64,
    /// Arrivals a second over the baseline, from the fault's start.
    pub series: Vec<f64>,
    pub parts: [[f64; 3]; 3],
}

/// How many clients and server slots at scale `k` (the bench's FULL_SCALE).
fn sized(profile: Profile, k: f64) -> (usize, f64, Vec<String>) {
    match profile {
        Profile::Steady => (
            (300.0 * k).round() as usize,
            1000.0,
            vec![format!("GET {ORIGIN}/capacity")],
        ),
        Profile::PageLoad => (
            (500.0 * k).round() as usize,
            10_000.0,
            ["user", "orders", "stock"]
                .iter()
                .flat_map(|e| [e, e])
                .map(|e| format!("GET {ORIGIN}/capacity/{e}"))
                .collect(),
        ),
    }
}

impl Sim {
    fn new(
        profile: Profile,
        fault: Fault,
        fault_ms: f64,
        k: f64,
        raw: &RawClientOptions,
        seed: u64,
    ) -> Self {
        let cfg = ClientConfig::from_raw(raw).unwrap();
        let (n, period, keys) = sized(profile, k);
        let specs: Vec<&'static Spec> = keys.into_iter().map(|key| spec(key, &cfg)).collect();
        let c = (20.0 * k).round() as usize;
        let flights = vec![vec![None::<usize>; specs.len()]; n];
        Self {
            profile,
            fault,
            fault_at: WARMUP,
            fault_end: WARMUP + fault_ms,
            total: WARMUP + fault_ms + RECOVERY,
            period,
            specs,
            clients: (0..n).map(|_| Guard::new(&cfg)).collect(),
            calls: Vec::new(),
            events: Queue::new(),
            serial: 0,
            rng: Rng(seed),
            server: Server {
                slots: c,
                service: 50.0,
                gateway: 1000.0,
                queue: (200.0 * k).round() as usize,
                busy: 0,
                q: VecDeque::new(),
                live: 0,
                items: Vec::new(),
            },
            arrivals: Vec::new(),
            tripped: Vec::new(),
            kinds: Vec::new(),
            waiting: Waiting::default(),
            flights,
            dedupe: cfg.dedupe,
        }
    }

    fn at(&mut self, time_ms: f64, event: Event) {
        self.events.at(time_ms, event);
    }

    fn run(&mut self) {
        let n = self.clients.len();
        for i in 0..n {
            let r = self.rng.next();
            let phase = match self.profile {
                Profile::Steady => r * self.period,
                Profile::PageLoad => (i as f64 + r) / n as f64 * self.period,
            };
            self.at(phase, Event::Fire(i));
        }
        while let Some((now, event)) = self.events.next() {
            match event {
                Event::Fire(i) => self.fire(i, now),
                Event::Attempt(id) => self.attempt(id, now),
                Event::Reply(id, serial, status) => self.reply(id, serial, status, now),
                Event::Done(item) => self.done(item, now),
                Event::Gateway(item) => self.gateway(item, now),
            }
        }
    }

    fn fire(&mut self, client: usize, now: f64) {
        if now + self.period < self.total {
            self.at(now + self.period, Event::Fire(client));
        }
        for i in 0..self.specs.len() {
            // The bench's calls of one client and path share one URL: a
            // call made while the one before is still out joins it.
            let lead =
                self.flights[client][i].filter(|&l| self.dedupe && self.calls[l].ok.is_none());
            let state = match lead {
                Some(l) => self.calls[l].state.clone(),
                None => self.clients[client].start(self.specs[i], now),
            };
            self.calls.push(Call {
                client,
                start: now,
                state,
                sent: None,
                serial: 0,
                ok: None,
                end: 0.0,
                joined: lead,
            });
            let id = self.calls.len() - 1;
            if lead.is_none() {
                self.flights[client][i] = Some(id);
                self.attempt(id, now);
            }
        }
    }

    fn finish(&mut self, id: usize, ok: bool, now: f64) {
        self.calls[id].ok = Some(ok);
        self.calls[id].end = now;
    }

    fn attempt(&mut self, id: usize, now: f64) {
        let coin = self.rng.next();
        let call = &mut self.calls[id];
        let client = call.client;
        let guard = &mut self.clients[client];
        match admit_and_slot(
            guard,
            &mut call.state,
            (client, id),
            &mut self.waiting,
            now,
            coin,
        ) {
            Step::Send(permit) => self.send(id, permit, now),
            Step::Wait { ms, .. } => self.at(now + ms, Event::Attempt(id)),
            Step::AwaitProbe | Step::Queued => {}
            Step::Stop(_) | Step::Full => {
                self.finish(id, false, now);
                self.wake(client, now);
            }
        }
    }

    fn send(&mut self, id: usize, permit: Option<Permit>, now: f64) {
        let call = &mut self.calls[id];
        let client = call.client;
        let guard = &mut self.clients[client];
        let key: &str = &call.state.spec.key;
        let tripped = guard
            .snapshot(now)
            .iter()
            .any(|s| s.key == key && s.state != stormguard::policy::breaker::State::Closed);
        let _ = guard.drain_transitions();
        let Some(sent) = guard.begin(&mut call.state, permit, now) else {
            self.finish(id, false, now);
            self.free_slot(client, now);
            return self.wake(client, now);
        };
        self.serial += 1;
        self.kinds.push((sent.attempt, sent.permit));
        call.serial = self.serial;
        call.sent = Some(sent);
        let arrive = now + 0.5;
        self.arrivals.push(arrive);
        if tripped {
            self.tripped.push(arrive);
        }
        self.arrive(id, self.serial, arrive);
    }

    fn in_fault(&self, t: f64) -> bool {
        (self.fault_at..self.fault_end).contains(&t)
    }

    fn slots(&self, t: f64) -> usize {
        if self.fault != Fault::Outage && self.in_fault(t) {
            ((self.server.slots as f64 * 0.3).round() as usize).max(1)
        } else {
            self.server.slots
        }
    }

    fn answer(&mut self, item: usize, status: u16, t: f64) {
        let it = &mut self.server.items[item];
        if it.answered {
            return;
        }
        it.answered = true;
        let (call, serial) = (it.call, it.serial);
        self.at(t + 0.5, Event::Reply(call, serial, status));
    }

    /// The capacity model's arrival (tests/server/server.mjs).
    fn arrive(&mut self, call: usize, serial: u64, t: f64) {
        let item = self.server.items.len();
        self.server.items.push(Item {
            call,
            serial,
            deadline: t + self.server.gateway,
            answered: false,
            queued: false,
        });
        if self.fault == Fault::Outage && self.in_fault(t) {
            return self.answer(item, 503, t);
        }
        let idle = self.server.busy < self.slots(t) && self.server.live == 0;
        if !idle && self.server.live >= self.server.queue {
            return self.answer(item, 503, t);
        }
        self.at(t + self.server.gateway, Event::Gateway(item));
        if idle {
            return self.start(item, t);
        }
        self.server.items[item].queued = true;
        self.server.q.push_back(item);
        self.server.live += 1;
    }

    fn start(&mut self, item: usize, t: f64) {
        self.server.busy += 1;
        self.at(t + self.server.service, Event::Done(item));
    }

    fn done(&mut self, item: usize, t: f64) {
        self.server.busy -= 1;
        self.answer(item, 200, t);
        self.pump(t);
    }

    fn gateway(&mut self, item: usize, t: f64) {
        let shed = self.fault == Fault::BrownoutShed;
        let it = &mut self.server.items[item];
        if it.queued && shed {
            it.queued = false;
            self.server.live -= 1;
        }
        self.answer(item, 504, t);
    }

    fn pump(&mut self, t: f64) {
        let shed = self.fault == Fault::BrownoutShed;
        while self.server.busy < self.slots(t) {
            let Some(item) = self.server.q.pop_front() else {
                break;
            };
            let it = &mut self.server.items[item];
            if !it.queued {
                continue; // shed already
            }
            it.queued = false;
            self.server.live -= 1;
            if shed && t >= it.deadline {
                self.answer(item, 504, t);
                continue;
            }
            if shed && t + self.server.service > self.server.items[item].deadline {
                self.answer(item, 503, t);
                continue;
            }
            self.start(item, t);
        }
    }

    fn free_slot(&mut self, client: usize, now: f64) {
        if let Some((id, permit)) = self.waiting.slot_freed(client, &mut self.clients[client]) {
            self.send(id, permit, now);
        }
    }

    fn wake(&mut self, client: usize, now: f64) {
        for id in self.waiting.released(client, &mut self.clients[client]) {
            self.at(now, Event::Attempt(id));
        }
    }

    fn reply(&mut self, id: usize, serial: u64, code: u16, now: f64) {
        if self.calls[id].serial != serial || self.calls[id].sent.is_none() {
            return;
        }
        let ok = code == 200;
        let end = ended_with(code);
        let rand01 = self.rng.next();
        let call = &mut self.calls[id];
        let client = call.client;
        let guard = &mut self.clients[client];
        match settle(guard, &mut call.state, &mut call.sent, &end, now, rand01) {
            Verdict::End => self.finish(id, ok, now),
            Verdict::Retry { delay_ms } => self.at(now + delay_ms, Event::Attempt(id)),
            Verdict::Fail { .. } => self.finish(id, false, now),
        }
        self.free_slot(client, now);
        self.wake(client, now);
    }

    /// The fault's arrivals by attempt number and permit, per call started
    /// in it: (first, second, later) x (normal, probe, origin probe).
    fn parts(&self) -> [[f64; 3]; 3] {
        let mut out = [[0.0; 3]; 3];
        let n = self.calls.iter().filter(|c| self.in_fault(c.start)).count() as f64;
        for (t, (attempt, permit)) in self.arrivals.iter().zip(&self.kinds) {
            if self.in_fault(*t) {
                let a = (*attempt as usize).clamp(1, 3) - 1;
                let p = match permit {
                    Some(Permit::Probe) => 1,
                    Some(Permit::Origin) => 2,
                    _ => 0,
                };
                out[a][p] += 1.0 / n;
            }
        }
        out
    }

    /// `bench/storm-metrics.mjs`'s figures.
    fn figures(&self) -> Figures {
        let mut arr = self.arrivals.clone();
        arr.sort_by(f64::total_cmp);
        let count = |from: f64, to: f64| {
            (arr.partition_point(|&t| t < to) - arr.partition_point(|&t| t < from)) as f64
        };
        let good = |c: &Call| c.ok == Some(true) && c.end - c.start <= DEADLINE;
        let calls_in = |from: f64, to: f64| {
            let (mut n, mut ok) = (0.0, 0.0);
            for c in self
                .calls
                .iter()
                .filter(|c| c.start >= from && c.start < to)
            {
                n += 1.0;
                if good(c) {
                    ok += 1.0;
                }
            }
            (n, ok)
        };
        let (fs, fe, end) = (self.fault_at, self.fault_end, self.total);
        let base_from = (fs - 5000.0).max(1000.0);
        let baseline = count(base_from, fs) / (fs - base_from) * 1000.0;
        let amplification = count(fs, fe) / calls_in(fs, fe).0;
        let (mut peak, mut peak_at) = (0.0, fs);
        let mut t = fs;
        while t + 1000.0 <= end + 1e-6 {
            let r = count(t, t + 1000.0);
            if r > peak {
                (peak, peak_at) = (r, t);
            }
            t += 1000.0;
        }
        let mut last_bad = None;
        let mut t = fe;
        while t + 1000.0 <= end + 1e-6 {
            let (n, ok) = calls_in(t, t + 1000.0);
            if n > 0.0 && ok / n < 0.99 {
                last_bad = Some(t);
            }
            t += 100.0;
        }
        let recovery_s = match last_bad {
            None => Some(0.0),
            Some(b) if b + 100.0 + 1000.0 > end + 1e-6 => None,
            Some(b) => Some((b + 100.0 - fe) / 1000.0),
        };
        let (n, ok) = calls_in(fs, f64::INFINITY);
        let from = fs + (self.fault_end - fs).min(20_000.0) / 2.0;
        let tripped = self
            .tripped
            .iter()
            .filter(|&&t| t >= from && t < fe)
            .count() as f64;
        let series = (0..((end - fs) / 1000.0) as usize)
            .map(|i| count(fs + i as f64 * 1000.0, fs + (i + 1) as f64 * 1000.0) / baseline)
            .collect();
        Figures {
            amplification,
            peak: peak / baseline,
            peak_at_s: (peak_at - fs) / 1000.0,
            recovery_s,
            success: ok / n,
            probe_load: tripped / (fe - from) * 1000.0 / baseline,
            series,
            parts: self.parts(),
        }
    }
}

/// The defaults (`none`: one attempt, no breaker or budget).
pub fn options(none: bool) -> RawClientOptions {
    if none {
        RawClientOptions {
            retry: Toggle::Off,
            budget: Toggle::Off,
            breaker: Toggle::Off,
            ..RawClientOptions::default()
        }
    } else {
        RawClientOptions::default()
    }
}

/// One storm run at the bench's scale on 2 cores (0.25).
pub fn storm(
    profile: Profile,
    fault: Fault,
    fault_ms: f64,
    raw: &RawClientOptions,
    seed: u64,
) -> Figures {
    let mut sim = Sim::new(profile, fault, fault_ms, 0.25, raw, seed);
    sim.run();
    for i in 0..sim.calls.len() {
        if let Some(l) = sim.calls[i].joined {
            (sim.calls[i].ok, sim.calls[i].end) = (sim.calls[l].ok, sim.calls[l].end);
        }
    }
    let open = sim.calls.iter().filter(|c| c.ok.is_none()).count();
    assert_eq!(open, 0, "calls never ended");
    sim.figures()
}

const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// A scenario's name as the figures print it, e.g. "outage 3 s steady".
fn case_name(profile: Profile, fault: Fault, ms: f64) -> String {
    let fault = match fault {
        Fault::Outage => "outage",
        Fault::Brownout => "brownout",
        Fault::BrownoutShed => "shed",
    };
    let profile = match profile {
        Profile::Steady => "steady",
        Profile::PageLoad => "page-load",
    };
    format!("{fault} {} s {profile}", ms / 1000.0)
}

fn show(name: &str, f: &Figures, none: &Figures) {
    let rec = f
        .recovery_s
        .map_or_else(|| "never".to_string(), |r| format!("{r:.1} s"));
    let series: Vec<String> = f.series.iter().take(8).map(|x| format!("{x:.2}")).collect();
    println!(
        "{name:<34} amp {:.2}  peak {:.2}x (at {} s)  recovery {rec}  success {:5.1} % (none {:5.1} %)  probe {:.2}  [{}]",
        f.amplification,
        f.peak,
        f.peak_at_s,
        f.success * 100.0,
        none.success * 100.0,
        f.probe_load,
        series.join(" ")
    );
    let p: Vec<String> = f
        .parts
        .iter()
        .map(|r| format!("{:.2}/{:.2}/{:.2}", r[0], r[1], r[2]))
        .collect();
    println!(
        "    fault's sends per call (normal/probe/origin), attempt 1, 2, 3+: {}",
        p.join("  ")
    );
}

#[test]
#[ignore = "figures: cargo test --release --test pagesim_steady -- --ignored --nocapture"]
fn figures() {
    let cases = [
        (Profile::Steady, Fault::Outage, 3000.0),
        (Profile::Steady, Fault::Outage, 5000.0),
        (Profile::Steady, Fault::Outage, 10_000.0),
        (Profile::Steady, Fault::Outage, 60_000.0),
        (Profile::PageLoad, Fault::Outage, 3000.0),
        (Profile::PageLoad, Fault::Outage, 10_000.0),
        (Profile::PageLoad, Fault::Outage, 60_000.0),
        (Profile::Steady, Fault::Brownout, 10_000.0),
        (Profile::PageLoad, Fault::Brownout, 10_000.0),
        (Profile::Steady, Fault::BrownoutShed, 3000.0),
        (Profile::Steady, Fault::BrownoutShed, 10_000.0),
        (Profile::Steady, Fault::BrownoutShed, 60_000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 3000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 10_000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 60_000.0),
    ];
    for (profile, fault, ms) in cases {
        let name = &case_name(profile, fault, ms);
        for seed in [1, 2, 3] {
            let f = storm(profile, fault, ms, &options(false), SEED ^ seed);
            let none = storm(profile, fault, ms, &options(true), SEED ^ seed);
            show(name, &f, &none);
        }
    }
}

fn breaker(open: f64, max_open: f64, consecutive: f64) -> RawClientOptions {
    use stormguard::policy::raw_options::RawBreaker;
    RawClientOptions {
        breaker: Toggle::On(RawBreaker {
            open_ms: Some(open),
            max_open_ms: Some(max_open),
            consecutive_failures: Toggle::On(consecutive),
            ..RawBreaker::default()
        }),
        ..RawClientOptions::default()
    }
}

/// The steady outages with the open period fixed at other lengths
/// (`openMs` = `maxOpenMs`): an open period short enough that the one
/// left over after a 3 s or 5 s outage costs less than 3 points of success
/// probes too often through a 10 s one (amplification over 0.55), and the
/// default's 2 s gives a 3 s cycle only because the poller calls every 1 s.
#[test]
#[ignore = "cargo test --release --test pagesim_steady open_periods -- --ignored --nocapture"]
fn open_periods() {
    let cases = [
        (Profile::Steady, Fault::Outage, 3000.0),
        (Profile::Steady, Fault::Outage, 5000.0),
        (Profile::Steady, Fault::Outage, 10_000.0),
        (Profile::Steady, Fault::Outage, 60_000.0),
        (Profile::Steady, Fault::BrownoutShed, 10_000.0),
        (Profile::Steady, Fault::Brownout, 10_000.0),
    ];
    for open in [1000.0, 1250.0, 1500.0, 1750.0, 2000.0, 3000.0] {
        let raw = breaker(open, open, 3.0);
        println!("openMs = maxOpenMs = {open}");
        for (profile, fault, ms) in cases {
            let name = &case_name(profile, fault, ms);
            let f = storm(profile, fault, ms, &raw, SEED ^ 1);
            let none = storm(profile, fault, ms, &options(true), SEED ^ 1);
            show(name, &f, &none);
        }
    }
}

/// Issue 42's storm targets that the rules meet in this model (issue 26's
/// that still hold, and the 60 s page-load outage's amplification): what a change to the
/// breaker must not lose. The steady 3 s and 5 s outages' success and the
/// peaks that miss are in `figures`.
#[test]
fn storm_runs_keep_the_targets_met() {
    let run = |profile, fault, ms| {
        (
            storm(profile, fault, ms, &options(false), SEED),
            storm(profile, fault, ms, &options(true), SEED),
        )
    };
    for ms in [10_000.0, 60_000.0] {
        let (f, none) = run(Profile::Steady, Fault::Outage, ms);
        assert!(
            f.amplification <= 0.55,
            "steady {ms}: amp {}",
            f.amplification
        );
        assert!(f.recovery_s.is_some_and(|r| r <= 2.05), "steady {ms}");
        assert!(f.success >= none.success - 0.03, "steady {ms}");
    }
    for ms in [3000.0, 10_000.0, 60_000.0] {
        let (f, none) = run(Profile::PageLoad, Fault::Outage, ms);
        // Issue 42: at most 0.55 at 60 s (0.64 while each half-open
        // endpoint sent its own probe).
        let cap = if ms < 60_000.0 { 1.36 } else { 0.55 };
        assert!(
            f.amplification <= cap,
            "page-load {ms}: amp {}",
            f.amplification
        );
        assert!(f.peak <= 1.5, "page-load {ms}: peak {}", f.peak);
        assert!(f.recovery_s.is_some_and(|r| r <= 2.0), "page-load {ms}");
        assert!(f.success >= none.success - 0.01, "page-load {ms}");
    }
    let (f, _) = run(Profile::Steady, Fault::Outage, 60_000.0);
    assert!(f.probe_load <= 0.5, "steady 60 s: probe {}", f.probe_load);
    let (f, _) = run(Profile::PageLoad, Fault::Outage, 60_000.0);
    assert!(
        f.probe_load <= 0.5,
        "page-load 60 s: probe {}",
        f.probe_load
    );
    for fault in [Fault::Brownout, Fault::BrownoutShed] {
        for profile in [Profile::Steady, Profile::PageLoad] {
            let (f, none) = run(profile, fault, 10_000.0);
            assert!(f.success >= none.success, "{profile:?} {fault:?}");
        }
        let (f, _) = run(Profile::Steady, fault, 10_000.0);
        assert!(f.peak <= 1.5, "steady {fault:?}: peak {}", f.peak);
    }
}

/// `budget.minRetries` at 3 (the default) and 2 in the scenarios it moves.
/// At 2 the page-load brownout-shed peaks (1.48-1.60x at 10 and 60 s with
/// 3) come to 1.42-1.46x, success still above none's, and the steady
/// profile's figures barely move; `tests/pagesim.rs`'s blips keep 100 % at
/// 100 and 300 ms. The default, 3, is the documented one (README, `budget.minRetries`).
#[test]
#[ignore = "cargo test --release --test pagesim_steady min_retries -- --ignored --nocapture"]
fn min_retries() {
    use stormguard::policy::raw_options::RawBudget;
    let cases = [
        (Profile::Steady, Fault::Outage, 3000.0),
        (Profile::Steady, Fault::Outage, 10_000.0),
        (Profile::Steady, Fault::Brownout, 10_000.0),
        (Profile::Steady, Fault::BrownoutShed, 10_000.0),
        (Profile::PageLoad, Fault::Outage, 3000.0),
        (Profile::PageLoad, Fault::Outage, 10_000.0),
        (Profile::PageLoad, Fault::Brownout, 10_000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 3000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 10_000.0),
        (Profile::PageLoad, Fault::BrownoutShed, 60_000.0),
    ];
    for min in [3.0, 2.0] {
        let raw = RawClientOptions {
            budget: Toggle::On(RawBudget {
                min_retries: Some(min),
                ..RawBudget::default()
            }),
            ..RawClientOptions::default()
        };
        println!("budget.minRetries {min}");
        for (profile, fault, ms) in cases {
            let name = &case_name(profile, fault, ms);
            for seed in [1, 2, 3] {
                let f = storm(profile, fault, ms, &raw, SEED ^ seed);
                let none = storm(profile, fault, ms, &options(true), SEED ^ seed);
                show(name, &f, &none);
            }
        }
    }
}
