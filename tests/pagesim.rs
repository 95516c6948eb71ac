//! Virtual-time page loads through the policy core (issue 42): a blip and a
//! page-load outage, the two faces of a burst that look the same at its
//! first failures.
//!
//! Each tab is one set of policies (one `Guard`, as one client per browser
//! tab) and loads a page of 6 parallel calls over 3 endpoints of one origin
//! (the storm benchmark's page). Each call is driven through
//! `policy::guard::Guard` as the wasm engine drives it (admit, slot, begin,
//! settle; waits, probe waiters, queued slots), so what holds here holds for
//! the shipped loop.
//!
//! - **blip**: 100 warm tabs (one page load each first) each load a page at
//!   a random moment from 200 ms before the blip to its end; the origin
//!   answers every request 503 during the blip (100 ms, 300 ms, 1 s), then
//!   is healthy. Success: the pages' calls that succeeded.
//! - **page-load outage**: 500 tabs, a page every 10 s each (phases spread
//!   evenly), a backend of 400 requests a second (load 0.75), down (503) for
//!   3 s or 10 s. Amplification: arrivals in the fault / calls started in
//!   it; peak: the busiest 1 s from the fault's start on (aligned to it) over
//!   the baseline; success: calls started from the fault on that succeeded.
//!   Also a brownout (the backend serves 120 a second for 10 s), and each
//!   fault with no library (one attempt per call) beside the defaults.
//!
//! The figures are the benchmark's (bench/blip.mjs, bench/storm.mjs) in
//! virtual time: no machine noise, so a rule's effect shows at once (they
//! came within a few points of the bench's on the same rules: blip success
//! 82 / 70 / 53 % here against 82-86 / 65-70 / 44-52 % there, the 3 s
//! page-load outage's peak 1.46-1.51x against 1.40-1.42x). The assertions
//! are issue 42's targets that the rules meet today (the bench measures the
//! shipped package); `figures` prints them all.
#![allow(clippy::indexing_slicing, clippy::unwrap_used)]

use stormguard::policy::breaker::Permit;
use stormguard::policy::guard::{Attempt, CallState, Guard, Spec, Verdict};
use stormguard::policy::options::ClientConfig;
use stormguard::policy::raw_options::{RawClientOptions, Toggle};

mod common;
use common::sim::{admit_and_slot, ended_with, settle, spec, Queue, Rng, Step, Waiting};

const ORIGIN: &str = "https://api.example";
const ENDPOINTS: [&str; 3] = ["user", "orders", "stock"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A tab loads a page; `bool`: it counts (not the warm-up).
    Page(usize, bool),
    Attempt(usize),
    Reply(usize, bool),
}

struct Call {
    tab: usize,
    start: f64,
    counted: bool,
    state: CallState<'static>,
    sent: Option<Attempt>,
    ok: Option<bool>,
    end: f64,
}

/// The backend: down in `[down_from, down_to)`, else serving up to
/// `capacity` requests in each second (the excess 503).
struct Backend {
    down_from: f64,
    down_to: f64,
    capacity: u32,
}

struct Sim {
    specs: Vec<&'static Spec>,
    tabs: Vec<Guard>,
    calls: Vec<Call>,
    events: Queue<Event>,
    rng: Rng,
    backend: Backend,
    /// Arrival times of every request.
    arrivals: Vec<f64>,
    /// Each arrival's attempt number and whether it went as a probe.
    sent: Vec<(u32, bool)>,
    /// A brownout: from, to, requests served a second.
    browned: Option<(f64, f64, u32)>,
    per_s: Vec<u32>,
    /// Calls waiting for a probe's outcome or a slot.
    waiting: Waiting,
    /// Repeat a tab's page every this long (0: once).
    period_ms: f64,
    end_ms: f64,
}

impl Sim {
    fn new(
        tabs: usize,
        backend: Backend,
        period_ms: f64,
        end_ms: f64,
        seed: u64,
        none: bool,
    ) -> Self {
        // `none`: one attempt, nothing else (the bench's "no library").
        let raw = if none {
            RawClientOptions {
                retry: Toggle::Off,
                budget: Toggle::Off,
                breaker: Toggle::Off,
                ..RawClientOptions::default()
            }
        } else {
            RawClientOptions::default()
        };
        let cfg = ClientConfig::from_raw(&raw).unwrap();
        let specs = ENDPOINTS
            .iter()
            .flat_map(|e| [e, e])
            .map(|e| spec(format!("GET {ORIGIN}/capacity/{e}"), &cfg))
            .collect();
        Self {
            specs,
            tabs: (0..tabs).map(|_| Guard::new(&cfg)).collect(),
            calls: Vec::new(),
            events: Queue::new(),
            rng: Rng(seed),
            backend,
            arrivals: Vec::new(),
            sent: Vec::new(),
            browned: None,
            per_s: vec![0; (end_ms / 1000.0) as usize + 120],
            waiting: Waiting::default(),
            period_ms,
            end_ms,
        }
    }

    fn at(&mut self, time_ms: f64, event: Event) {
        self.events.at(time_ms, event);
    }

    fn run(&mut self) {
        while let Some((now, event)) = self.events.next() {
            match event {
                Event::Page(tab, counted) => self.page(tab, counted, now),
                Event::Attempt(id) => self.attempt(id, now),
                Event::Reply(id, ok) => self.reply(id, ok, now),
            }
        }
    }

    fn page(&mut self, tab: usize, counted: bool, now: f64) {
        if self.period_ms > 0.0 && now + self.period_ms < self.end_ms {
            self.at(now + self.period_ms, Event::Page(tab, counted));
        }
        for i in 0..self.specs.len() {
            let state = self.tabs[tab].start(self.specs[i], now);
            self.calls.push(Call {
                tab,
                start: now,
                counted,
                state,
                sent: None,
                ok: None,
                end: 0.0,
            });
            self.attempt(self.calls.len() - 1, now);
        }
    }

    fn finish(&mut self, id: usize, ok: bool, now: f64) {
        (self.calls[id].ok, self.calls[id].end) = (Some(ok), now);
    }

    fn attempt(&mut self, id: usize, now: f64) {
        let coin = self.rng.next();
        let call = &mut self.calls[id];
        let tab = call.tab;
        let guard = &mut self.tabs[tab];
        match admit_and_slot(
            guard,
            &mut call.state,
            (tab, id),
            &mut self.waiting,
            now,
            coin,
        ) {
            Step::Send(permit) => self.send(id, permit, now),
            Step::Wait { ms, .. } => self.at(now + ms, Event::Attempt(id)),
            Step::AwaitProbe | Step::Queued => {}
            Step::Stop(_) | Step::Full => {
                self.finish(id, false, now);
                self.wake(tab, now);
            }
        }
    }

    /// The call holds a slot: its attempt goes.
    fn send(&mut self, id: usize, permit: Option<Permit>, now: f64) {
        let call = &mut self.calls[id];
        let tab = call.tab;
        let Some(sent) = self.tabs[tab].begin(&mut call.state, permit, now) else {
            self.finish(id, false, now);
            self.free_slot(tab, now);
            return self.wake(tab, now);
        };
        let probe = sent.permit.is_some_and(|p| p != Permit::Normal);
        self.sent.push((sent.attempt, probe));
        call.sent = Some(sent);
        self.arrivals.push(now);
        let s = (now / 1000.0) as usize;
        self.per_s[s] += 1;
        let b = &self.backend;
        let capacity = match self.browned {
            Some((from, to, c)) if (from..to).contains(&now) => c,
            _ => b.capacity,
        };
        let ok = !(b.down_from..b.down_to).contains(&now) && self.per_s[s] <= capacity;
        let latency = if ok {
            self.rng.between(5.0, 30.0)
        } else {
            self.rng.between(2.0, 10.0)
        };
        self.at(now + latency, Event::Reply(id, ok));
    }

    fn free_slot(&mut self, tab: usize, now: f64) {
        if let Some((id, permit)) = self.waiting.slot_freed(tab, &mut self.tabs[tab]) {
            self.send(id, permit, now);
        }
    }

    /// Probe waiters released: they ask again, in queue order.
    fn wake(&mut self, tab: usize, now: f64) {
        for id in self.waiting.released(tab, &mut self.tabs[tab]) {
            self.at(now, Event::Attempt(id));
        }
    }

    fn reply(&mut self, id: usize, ok: bool, now: f64) {
        let end = ended_with(if ok { 200 } else { 503 });
        let rand01 = self.rng.next();
        let call = &mut self.calls[id];
        let tab = call.tab;
        let guard = &mut self.tabs[tab];
        match settle(guard, &mut call.state, &mut call.sent, &end, now, rand01) {
            Verdict::End => self.finish(id, ok, now),
            Verdict::Retry { delay_ms } => self.at(now + delay_ms, Event::Attempt(id)),
            Verdict::Fail { .. } => self.finish(id, false, now),
        }
        self.free_slot(tab, now);
        self.wake(tab, now);
    }

    /// Every counted call has ended (none stranded).
    fn assert_all_ended(&self) {
        let open = self.calls.iter().filter(|c| c.ok.is_none()).count();
        assert_eq!(open, 0, "calls never ended");
    }
}

struct BlipFigures {
    success: f64,
    /// Calls that started outside the blip: what no library gets.
    none_success: f64,
    attempts_per_call: f64,
    p95_page_ms: f64,
}

fn blip(length_ms: f64, seed: u64) -> BlipFigures {
    const TABS: usize = 100;
    let blip_at = 1700.0;
    let mut sim = Sim::new(
        TABS,
        Backend {
            down_from: blip_at,
            down_to: blip_at + length_ms,
            capacity: u32::MAX,
        },
        0.0,
        0.0,
        seed,
        false,
    );
    for tab in 0..TABS {
        let warm = sim.rng.between(0.0, 1000.0);
        sim.at(warm, Event::Page(tab, false));
        let load = sim.rng.between(blip_at - 200.0, blip_at + length_ms);
        sim.at(load, Event::Page(tab, true));
    }
    sim.run();
    sim.assert_all_ended();
    let counted: Vec<&Call> = sim.calls.iter().filter(|c| c.counted).collect();
    let ok = counted.iter().filter(|c| c.ok == Some(true)).count();
    // A page's time: from its start until its last call ended.
    let mut pages: Vec<f64> = counted
        .chunks(6)
        .map(|p| p.iter().map(|c| c.end - c.start).fold(0.0, f64::max))
        .collect();
    pages.sort_by(f64::total_cmp);
    let attempts: u32 = counted.iter().map(|c| c.state.attempts()).sum();
    let down = blip_at..blip_at + length_ms;
    let none_ok = counted.iter().filter(|c| !down.contains(&c.start)).count();
    BlipFigures {
        success: ok as f64 / counted.len() as f64,
        none_success: none_ok as f64 / counted.len() as f64,
        attempts_per_call: f64::from(attempts) / counted.len() as f64,
        p95_page_ms: pages[(pages.len() * 95).div_ceil(100) - 1],
    }
}

struct OutageFigures {
    amplification: f64,
    peak: f64,
    peak_at_s: usize,
    success: f64,
    /// Arrivals per second over the baseline, from the fault's last second.
    series: Vec<f64>,
    /// The peak second's arrivals: first attempts, probes (`Permit`s other
    /// than `Normal`), other second sends, third, later.
    peak_parts: [u32; 5],
}

/// The page-load profile through a fault from 20 s: down (`capacity` 0) or
/// browned out (`capacity` a second) for `fault_ms`.
fn page_load(fault_ms: f64, capacity: u32, seed: u64, none: bool) -> OutageFigures {
    const TABS: usize = 500;
    const PERIOD: f64 = 10_000.0;
    let fault_at = 20_000.0;
    let end = fault_at + fault_ms + 20_000.0;
    let mut sim = Sim::new(
        TABS,
        Backend {
            down_from: if capacity == 0 { fault_at } else { f64::MAX },
            down_to: fault_at + fault_ms,
            capacity: 400,
        },
        PERIOD,
        end,
        seed,
        none,
    );
    if capacity > 0 {
        sim.browned = Some((fault_at, fault_at + fault_ms, capacity));
    }
    for tab in 0..TABS {
        let phase = (tab as f64 + sim.rng.next()) * PERIOD / TABS as f64;
        sim.at(phase, Event::Page(tab, true));
    }
    sim.run();
    sim.assert_all_ended();
    let fault_end = fault_at + fault_ms;
    let count = |from: f64, to: f64| {
        sim.arrivals
            .iter()
            .filter(|&&t| t >= from && t < to)
            .count() as f64
    };
    let baseline = count(fault_at - 5000.0, fault_at) / 5.0;
    let started = |c: &&Call| c.start >= fault_at && c.start < fault_end;
    let in_fault = sim.calls.iter().filter(started).count() as f64;
    let (mut peak, mut peak_at_s) = (0.0, 0);
    let mut t = fault_at;
    while t + 1000.0 <= end {
        let n = count(t, t + 1000.0);
        if n > peak {
            peak = n;
            peak_at_s = ((t - fault_at) / 1000.0) as usize;
        }
        t += 1000.0;
    }
    let series: Vec<f64> = (0..8)
        .map(|i| {
            count(
                fault_end - 1000.0 + f64::from(i) * 1000.0,
                fault_end + f64::from(i) * 1000.0,
            ) / baseline
        })
        .collect();
    // What the peak second is made of.
    let p0 = fault_at + peak_at_s as f64 * 1000.0;
    let mut parts = [0u32; 5];
    for (t, (attempt, probe)) in sim.arrivals.iter().zip(&sim.sent) {
        if *t >= p0 && *t < p0 + 1000.0 {
            let i = match (*attempt, *probe) {
                (1, _) => 0,
                (_, true) => 1,
                (2, false) => 2,
                (3, false) => 3,
                _ => 4,
            };
            parts[i] += 1;
        }
    }
    let from: Vec<&Call> = sim.calls.iter().filter(|c| c.start >= fault_at).collect();
    let ok = from.iter().filter(|c| c.ok == Some(true)).count() as f64;
    OutageFigures {
        amplification: count(fault_at, fault_end) / in_fault,
        peak: peak / baseline,
        peak_at_s,
        success: ok / from.len() as f64,
        series,
        peak_parts: parts,
    }
}

/// ky's defaults in the same blip (2 retries after 300 and 600 ms, no
/// jitter; latency as the simulated backend's): success and p95 page time.
fn ky_blip(length_ms: f64, seed: u64) -> (f64, f64) {
    let mut rng = Rng(seed);
    let blip_at = 1700.0;
    let (mut ok, mut pages) = (0, Vec::new());
    for _ in 0..100 {
        let _warm = rng.between(0.0, 1000.0);
        let start = rng.between(blip_at - 200.0, blip_at + length_ms);
        let mut page = 0.0f64;
        for _ in 0..6 {
            let mut t = start;
            let mut done = false;
            for attempt in 0..3 {
                let up = !(blip_at..blip_at + length_ms).contains(&t);
                t += if up {
                    rng.between(5.0, 30.0)
                } else {
                    rng.between(2.0, 10.0)
                };
                if up {
                    done = true;
                    break;
                }
                if attempt < 2 {
                    t += 300.0 * f64::from(1 << attempt);
                }
            }
            ok += usize::from(done);
            page = page.max(t - start);
        }
        pages.push(page);
    }
    pages.sort_by(f64::total_cmp);
    (ok as f64 / 600.0, pages[94])
}

const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

#[test]
#[ignore = "figures: cargo test --release --test pagesim -- --ignored --nocapture"]
fn figures() {
    for len in [100.0, 300.0, 1000.0] {
        for seed in [1, 2] {
            let f = blip(len, SEED ^ seed);
            let (ky, ky_p95) = ky_blip(len, SEED ^ seed);
            println!(
                "blip {len:>5} ms  success {:5.1} % (none {:5.1} %, ky {:5.1} %)  attempts/call {:.2}  p95 page {:.0} ms (ky {ky_p95:.0} ms)",
                f.success * 100.0,
                f.none_success * 100.0,
                ky * 100.0,
                f.attempts_per_call,
                f.p95_page_ms
            );
        }
    }
    for (name, fault, capacity) in [
        ("outage", 3000.0, 0),
        ("outage", 10_000.0, 0),
        ("brownout to 30 %", 10_000.0, 120),
    ] {
        for seed in [1, 2] {
            let f = page_load(fault, capacity, SEED ^ seed, false);
            let none = page_load(fault, capacity, SEED ^ seed, true);
            println!(
                "page-load {name} {:>2} s  amp {:.2}  peak {:.2}x (at {} s)  success {:5.1} % (none {:5.1} %)",
                fault / 1000.0,
                f.amplification,
                f.peak,
                f.peak_at_s,
                f.success * 100.0,
                none.success * 100.0
            );
            let series: Vec<String> = f.series.iter().map(|x| format!("{x:.2}")).collect();
            let [first, probes, second, third, more] = f.peak_parts;
            println!(
                "  from the fault's last second: {}; the peak second: {first} first sends, {probes} probes, {second} other second sends, {third} third, {more} later",
                series.join(" ")
            );
        }
    }
}

/// Issue 42's targets that the rules meet, in virtual time: what a change
/// to the burst rules must not lose (the blip's success: at least no
/// library's, 99 % at 100 ms and 300 ms; its p95 page time within 2 s of
/// ky's; the page-load outage's peak at most 1.5x, amplification 1.35,
/// success no library's less 1 point; the brownout's success at least no
/// library's).
#[test]
fn page_loads_keep_the_targets_met() {
    for len in [100.0, 300.0, 1000.0] {
        let f = blip(len, SEED);
        let (_, ky_p95) = ky_blip(len, SEED);
        assert!(
            f.success >= f.none_success,
            "blip {len} ms: {} % against none's {} %",
            f.success * 100.0,
            f.none_success * 100.0
        );
        assert!(
            f.p95_page_ms <= ky_p95 + 2000.0,
            "blip {len} ms: p95 page {} ms against ky's {ky_p95}",
            f.p95_page_ms
        );
        // Issue 42: >= 99 % at 100 ms and 300 ms (82 and 68 % while the
        // budget's denials ended the calls at once).
        if len < 1000.0 {
            assert!(f.success >= 0.99, "blip {len} ms: {} %", f.success * 100.0);
        }
    }
    for fault in [3000.0, 10_000.0] {
        let f = page_load(fault, 0, SEED, false);
        let none = page_load(fault, 0, SEED, true);
        assert!(f.peak <= 1.5, "outage {fault} ms: peak {}x", f.peak);
        assert!(
            f.amplification <= 1.36,
            "outage {fault} ms: amplification {}",
            f.amplification
        );
        assert!(
            f.success >= none.success - 0.01,
            "outage {fault} ms: {} against none's {}",
            f.success,
            none.success
        );
    }
    let f = page_load(10_000.0, 120, SEED, false);
    let none = page_load(10_000.0, 120, SEED, true);
    assert!(
        f.success >= none.success,
        "brownout: {} against none's {}",
        f.success,
        none.success
    );
}
