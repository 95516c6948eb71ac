// The retry-storm simulator: N virtual clients in this page, each its own
// client instance of the chosen strategy, call the fault server's
// capacity-limited endpoint in an open loop; the page switches the backend
// into a brownout or an outage and draws what reaches the server.
//
// Strategies come from bench/strategies.mjs (the same factories the storm
// benchmark runs in Node), with ky and cockatiel bundled from npm into
// www/vendor/ by `npm start` (scripts/vendor.mjs).
import { createClient } from '/pkg/index.js';
import { DESCRIPTIONS, makeStrategies } from '../bench/strategies.mjs';
import { drawChart } from './charts.js';
import { LAYOUT_DOC, startLayoutPanel } from './layout.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const STRATEGIES = ['naive', 'ky', 'cockatiel', 'stormguard', 'none'];
const LABELS = { none: 'none (no retries)' };
const SHORT = {
  none: 'One attempt per call, 3 s timeout. The reference: the server sees exactly the calls users make.',
  naive: '300 ms timeout per attempt, then 3 immediate retries, no jitter: what the SDK in the 30-minute incident did.',
  ky: 'ky from npm with its documented retry defaults: 3 attempts, 300 then 600 ms between them, no jitter, 10 s timeout.',
  cockatiel: 'cockatiel from npm: retry 3 attempts with exponential backoff, a breaker that opens for 10 s after 5 failures in a row, 3 s timeout.',
  stormguard: 'stormguard createClient() with its defaults: jittered backoff (1 s base), a retry budget, a breaker per endpoint (opens after 3 failures in a row, probes every 2 s), a concurrency limit.',
};
const WINDOW_S = 60; // charts: the last minute
const FIG_S = 5; // figures: the last 5 s
const FAULT_COLORS = { brownout: 'rgba(250, 176, 5, 0.16)', outage: 'rgba(224, 49, 49, 0.13)' };

function fatal(msg) {
  const box = $('fatal');
  box.hidden = false;
  box.textContent = msg;
}
window.addEventListener('error', (e) => fatal(`Error: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => fatal(`Error: ${e.reason?.stack ?? e.reason}`));

// ---------------------------------------------------------------- libraries
document.body.dataset.phase = 'libraries';
const [kyMod, cockatielMod] = await Promise.allSettled([import('./vendor/ky.js'), import('./vendor/cockatiel.js')]);
const ky = kyMod.status === 'fulfilled' ? kyMod.value.default : null;
const cockatiel = cockatielMod.status === 'fulfilled' ? cockatielMod.value : null;
if (!ky || !cockatiel) {
  fatal('www/vendor/ky.js or cockatiel.js is missing: start the demo with `npm start` (it bundles them), or run `node scripts/vendor.mjs`.');
}
// cockatiel's breaker is created inside the shared factory: catch it on the way out to show its state.
let lastCockatielBreaker = null;
const cockatielSpy = cockatiel && {
  ...cockatiel,
  circuitBreaker: (...args) => (lastCockatielBreaker = cockatiel.circuitBreaker(...args)),
};
const factories = makeStrategies({ ky, cockatiel: cockatielSpy, createClient });

// ---------------------------------------------------------------- servers
const realFetch = globalThis.fetch.bind(globalThis);
const main = location.origin;

async function loadServers() {
  const ports = params.get('ports');
  if (ports) return { load: ports.split(',').map((p) => `${location.protocol}//${location.hostname}:${p.trim()}`), from: 'the ports= parameter' };
  try {
    const res = await realFetch(`vendor/servers/${location.port}.json`, { cache: 'no-store' });
    if (res.ok) {
      const cfg = await res.json();
      if (cfg.load?.length) return { load: cfg.load, versions: cfg.versions, from: 'npm start' };
    }
  } catch {}
  return { load: [main], from: 'fallback' };
}
document.body.dataset.phase = 'servers';
const servers = await loadServers();

async function control(path, body) {
  const res = await realFetch(main + path, body === undefined ? { cache: 'no-store' } : {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

// The server's clock (ms since it started): seconds on every chart are the server's seconds.
document.body.dataset.phase = 'clock';
let clockOffset = 0;
{
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const a = performance.now();
    const { now } = await control('/_time');
    const b = performance.now();
    if (b - a < best) {
      best = b - a;
      clockOffset = now - (a + b) / 2;
    }
  }
}
const serverNow = () => performance.now() + clockOffset;
const secOf = (pageMs) => Math.floor((pageMs + clockOffset) / 1000);
const curSec = () => Math.floor(serverNow() / 1000);

// ---------------------------------------------------------------- per-second buckets
const buckets = new Map();
function bucket(s) {
  let b = buckets.get(s);
  if (!b) {
    b = {
      calls: 0, ok: 0, fail: 0, lat: [], sent: 0, inflightMax: 0,
      srvArrivals: null, srvOk: null, srvFailed: null, srvLoad: null, slots: null, brOpen: null, brHalf: null, heldMax: null,
    };
    buckets.set(s, b);
    for (const k of buckets.keys()) {
      if (k < s - 200) buckets.delete(k);
      else break;
    }
  }
  return b;
}
const get = (s) => buckets.get(s);

// ---------------------------------------------------------------- counting every attempt
// Every strategy (stormguard's wasm included) calls the global fetch at call time, so this wrapper sees
// every attempt. (No fetch priority is set: Chromium delays low-priority requests on purpose, which
// would change what the strategies see.)
let inflight = 0;
globalThis.fetch = function demoFetch(input, init) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (!url.includes('/capacity')) return realFetch(input, init);
  if (url.includes('id=layout')) {
    // The layout service is the same capacity-limited backend: its 200 carries the layout document.
    return realFetch(input, init).then((res) => {
      if (!res.ok) return res;
      res.body?.cancel().catch(() => {});
      return new Response(JSON.stringify(LAYOUT_DOC), { status: 200, headers: { 'content-type': 'application/json' } });
    });
  }
  const b = bucket(curSec());
  b.sent++;
  inflight++;
  if (inflight > b.inflightMax) b.inflightMax = inflight;
  const p = realFetch(input, init);
  const done = () => {
    inflight--;
  };
  p.then(done, done);
  return p;
};

// ---------------------------------------------------------------- virtual clients
const S = {
  strategy: STRATEGIES.includes(params.get('strategy')) ? params.get('strategy') : 'stormguard',
  n: clampInt(params.get('clients'), 200, 1, 1000),
  periodMs: clampInt(params.get('period'), 1000, 100, 10_000),
  gen: 0,
  clients: [],
  totalCalls: 0,
  fault: null,
  faults: [],
  cap: null,
  work: [], // [{ t, completed, wasted }] from the polls
  rebuilding: null,
};
function clampInt(v, def, min, max) {
  const n = Math.round(Number(v));
  return v !== null && Number.isFinite(n) ? Math.min(max, Math.max(min, n)) : def;
}
if (params.get('fault')) {
  const opt = $('fault-len');
  const v = String(clampInt(params.get('fault'), 10, 1, 120));
  if (![...opt.options].some((o) => o.value === v)) opt.add(new Option(`${v} s`, v));
  opt.value = v;
}

async function makeClient(i, strategy) {
  lastCockatielBreaker = null;
  const impl = await factories[strategy]();
  const origin = servers.load[i % servers.load.length];
  return {
    i,
    impl,
    breaker: strategy === 'cockatiel' ? lastCockatielBreaker : null,
    url: `${origin}/capacity?id=demo&c=${i}`,
    next: performance.now() + Math.random() * S.periodMs,
  };
}

function breakerState(vc) {
  if (S.strategy === 'stormguard') {
    let st = 'closed';
    for (const b of vc.impl.client.breakers()) {
      if (b.state === 'open') return 'open';
      if (b.state === 'half-open') st = 'half';
    }
    return st;
  }
  if (vc.breaker) {
    const s = vc.breaker.state; // cockatiel CircuitState: 0 closed, 1 open, 2 half-open, 3 isolated
    return s === 1 || s === 3 ? 'open' : s === 2 ? 'half' : 'closed';
  }
  return null;
}
const hasBreaker = (s) => s === 'stormguard' || s === 'cockatiel';

function fire(vc) {
  const gen = S.gen;
  const start = performance.now();
  bucket(secOf(start)).calls++;
  S.totalCalls++;
  const fault = S.fault?.running ? S.fault : null;
  if (fault) fault.started++;
  const done = (ok) => {
    if (gen !== S.gen) return; // the strategy changed meanwhile
    const end = performance.now();
    const b = bucket(secOf(end));
    if (ok) b.ok++;
    else b.fail++;
    b.lat.push(end - start);
    if (fault) {
      fault.settled++;
      if (ok) fault.ok++;
    }
  };
  let p;
  try {
    p = vc.impl.call(vc.url);
  } catch (e) {
    p = Promise.reject(e);
  }
  p.then(() => done(true), () => done(false));
}

function tick() {
  if (S.rebuilding) return;
  const t = performance.now();
  for (const vc of S.clients) {
    if (t >= vc.next) {
      fire(vc);
      vc.next += S.periodMs;
      if (vc.next < t) vc.next = t + Math.random() * S.periodMs; // fell behind (hidden tab)
    }
  }
}
setInterval(tick, 5);

// Is the page itself keeping up? A timer that should fire every 50 ms, and how late it is.
{
  let expected = performance.now() + 50;
  setInterval(() => {
    const t = performance.now();
    const b = bucket(secOf(t));
    b.lagMax = Math.max(b.lagMax ?? 0, t - expected);
    expected = t + 50;
  }, 50);
}

async function rebuild() {
  const strategy = S.strategy;
  const n = S.n;
  const run = (async () => {
    const old = S.clients;
    const changed = old.length === 0 || old.strategy !== strategy;
    let list;
    if (changed) {
      S.gen++;
      if (S.fault?.running) S.fault.mixed = true;
      for (const vc of old) vc.impl.close();
      list = [];
    } else {
      list = old.slice(0, n);
      for (const vc of old.slice(n)) vc.impl.close();
    }
    for (let i = list.length; i < n; i++) list.push(await makeClient(i, strategy));
    list.strategy = strategy;
    S.clients = list;
  })();
  S.rebuilding = run;
  try {
    await run;
  } finally {
    if (S.rebuilding === run) S.rebuilding = null;
  }
  if (S.strategy !== strategy || S.n !== n) return rebuild();
  render();
}

// ---------------------------------------------------------------- faults
async function startFault(kind) {
  if (S.fault?.running) return;
  const lenMs = Number($('fault-len').value) * 1000;
  const f = {
    kind, lenMs, strategy: S.strategy, gen: S.gen, clients: S.n, running: true,
    started: 0, settled: 0, ok: 0, recovery: undefined,
  };
  S.fault = f;
  const snap = await control('/_capacity', kind === 'outage' ? { mode: 'outage' } : { mode: 'brownout', factor: 0.3 });
  f.startMs = serverNow();
  f.arrivals0 = snap.arrivals;
  f.calls0 = S.totalCalls;
  f.endsAt = performance.now() + lenMs;
  S.faults.push(f);
  applyCap(snap);
  render();
  await new Promise((r) => setTimeout(r, lenMs));
  const end = await control('/_capacity', { mode: 'normal' });
  f.endMs = serverNow();
  f.arrivals1 = end.arrivals;
  f.calls1 = S.totalCalls;
  f.running = false;
  f.amp = (f.arrivals1 - f.arrivals0) / Math.max(1, f.calls1 - f.calls0);
  applyCap(end);
  render();
}

// Live figures of a fault: amplification, peak second / baseline, success, recovery.
function faultFigures(f) {
  const cur = curSec();
  const amp = f.running
    ? (S.cap ? (S.cap.arrivals - f.arrivals0) / Math.max(1, S.totalCalls - f.calls0) : NaN)
    : f.amp;
  const s0 = Math.floor(f.startMs / 1000);
  let base = 0;
  let nb = 0;
  for (let s = s0 - 5; s < s0; s++) {
    const v = get(s)?.srvArrivals;
    // seconds in which the clients ran the whole second (not the page's first)
    if (v != null && get(s).calls > 0 && get(s - 1)?.calls > 0) {
      base += v;
      nb++;
    }
  }
  base = nb ? base / nb : NaN;
  let peak = 0;
  const peakTo = f.running ? cur : Math.min(cur, Math.floor(f.endMs / 1000) + 6);
  for (let s = s0; s < peakTo; s++) peak = Math.max(peak, get(s)?.srvArrivals ?? 0);
  let recovery = f.recovery;
  let recoveryText;
  if (f.running) recoveryText = '…';
  else if (recovery !== undefined) recoveryText = recovery === null ? 'not within 60 s' : `${recovery.toFixed(1)} s`;
  else {
    // the earliest second from which every complete second has >= 99 % of its calls succeed
    const e0 = Math.floor(f.endMs / 1000);
    let from = null;
    for (let s = cur - 1; s >= e0; s--) {
      const b = get(s);
      const n = b ? b.ok + b.fail : 0;
      if (n > 0 && b.ok / n < 0.99) break;
      from = s;
    }
    const sinceEnd = (serverNow() - f.endMs) / 1000;
    if (from !== null && cur - from >= 5) {
      recovery = f.recovery = Math.max(0, from * 1000 - f.endMs) / 1000;
      recoveryText = `${recovery.toFixed(1)} s`;
    } else if (sinceEnd > 60) {
      f.recovery = null;
      recoveryText = 'not within 60 s';
    } else recoveryText = `not yet (${Math.floor(sinceEnd)} s)`;
  }
  return {
    amp,
    peak: nb && base > 0 ? peak / base : NaN,
    success: f.settled ? f.ok / f.settled : NaN,
    pending: f.started - f.settled,
    recovery,
    recoveryText,
  };
}

// ---------------------------------------------------------------- server polling
function applyCap(c) {
  S.cap = c;
  const cur = curSec();
  const b = bucket(cur);
  const load = c.busy + c.queued;
  b.srvLoad = Math.max(b.srvLoad ?? 0, load);
  b.slots = b.slots === null ? c.slots : Math.min(b.slots, c.slots);
  for (const p of c.perSecond ?? []) {
    if (p.t >= cur) continue;
    const pb = bucket(p.t);
    pb.srvArrivals = p.arrivals;
    pb.srvOk = p.ok;
    pb.srvFailed = p.failed;
  }
  S.work.push({ t: serverNow(), completed: c.completed, wasted: c.wasted });
  while (S.work.length > 2 && S.work[1].t < serverNow() - FIG_S * 1000) S.work.shift();
}
async function poll() {
  try {
    const inflightAtAsk = inflight;
    const [cap, st] = await Promise.all([control('/_capacity'), control('/_stats?id=demo')]);
    applyCap(cap);
    // requests the page has started that the server has not received yet: held inside the browser
    const held = Math.max(0, Math.min(inflightAtAsk, inflight) - st.concurrentNow);
    const b = bucket(curSec());
    b.heldMax = Math.max(b.heldMax ?? 0, held);
  } catch (e) {
    $('server-state').textContent = `server unreachable: ${e.message}`;
  }
}
setInterval(poll, 500);

function sampleBreakers() {
  if (S.rebuilding || !hasBreaker(S.strategy)) return;
  let open = 0;
  let half = 0;
  for (const vc of S.clients) {
    const st = breakerState(vc);
    if (st === 'open') open++;
    else if (st === 'half') half++;
  }
  const b = bucket(curSec());
  b.brOpen = open / Math.max(1, S.clients.length);
  b.brHalf = half / Math.max(1, S.clients.length);
  S.breakersNow = { open, half, n: S.clients.length };
}

// ---------------------------------------------------------------- figures and text
function pct(list, q) {
  if (!list.length) return NaN;
  const a = Float64Array.from(list).sort();
  return a[Math.min(a.length - 1, Math.floor(q * a.length))];
}
function recent() {
  const cur = curSec();
  let calls = 0;
  let arrivals = 0;
  let arrivalsKnown = 0;
  let ok = 0;
  let fail = 0;
  const lat = [];
  for (let s = cur - FIG_S; s < cur; s++) {
    const b = get(s);
    if (!b) continue;
    calls += b.calls;
    ok += b.ok;
    fail += b.fail;
    for (const v of b.lat) lat.push(v);
    if (b.srvArrivals != null) {
      arrivals += b.srvArrivals;
      arrivalsKnown++;
    }
  }
  let lag = 0;
  let held = 0;
  for (let s = cur - FIG_S; s < cur; s++) {
    lag = Math.max(lag, get(s)?.lagMax ?? 0);
    held = Math.max(held, get(s)?.heldMax ?? 0);
  }
  const w = S.work;
  const dCompleted = w.length > 1 ? w.at(-1).completed - w[0].completed : 0;
  const dWasted = w.length > 1 ? w.at(-1).wasted - w[0].wasted : 0;
  return {
    calls: calls / FIG_S,
    arrivals: arrivalsKnown ? arrivals / arrivalsKnown : NaN,
    amp: arrivalsKnown && calls ? arrivals / arrivalsKnown / (calls / FIG_S) : NaN,
    success: ok + fail ? ok / (ok + fail) : NaN,
    p95: pct(lat, 0.95),
    wasted: dCompleted > 20 ? dWasted / dCompleted : 0,
    lag,
    held,
  };
}

const fmt = {
  rate: (v) => (Number.isFinite(v) ? (v >= 100 ? Math.round(v).toString() : v.toFixed(v >= 10 ? 0 : 1)) : '–'),
  amp: (v) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '–'),
  pct: (v) => (Number.isFinite(v) ? `${v >= 0.995 || v < 0.1 ? Math.round(v * 100) : (v * 100).toFixed(1)} %` : '–'),
  ms: (v) => (!Number.isFinite(v) ? '–' : v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`),
};
function setFig(id, text, level) {
  const e = $(id);
  e.querySelector('.v').textContent = text;
  e.dataset.level = level ?? '';
}
const level = (v, good, bad, higherIsBad = true) => {
  if (!Number.isFinite(v)) return '';
  if (higherIsBad) return v <= good ? 'good' : v >= bad ? 'bad' : 'warn';
  return v >= good ? 'good' : v <= bad ? 'bad' : 'warn';
};
const capacityNow = () => (S.cap ? (S.cap.mode === 'outage' ? 0 : (S.cap.slots * 1000) / S.cap.serviceMs) : NaN);

const WHY = {
  none: 'With no retries the server sees one request per call: failures show up as failures, and nothing is added.',
  naive: 'naive gives each attempt 300 ms, then retries at once: a slow answer becomes four requests that all join the same queue, and the queue never empties.',
  ky: 'ky retries after 300 ms and then 600 ms, the same delays for every client, so the retries arrive together in waves.',
  cockatiel: 'cockatiel retries with backoff; a client\'s breaker opens for 10 s after 5 failures in a row, then lets calls through all at once.',
  stormguard: 'stormguard spends at most a small retry budget (3 + 10 % of calls per 10 s), spreads retries with random backoff over a second or two, and a client\'s breaker opens after 3 failures in a row: it sends nothing for 2 s, then one probe, until the backend answers.',
};

function explain(r) {
  const f = S.faults.at(-1);
  const cap = capacityNow();
  const name = S.strategy === 'none' ? 'no retries' : S.strategy;
  const ampText = fmt.amp(r.amp);
  if (!Number.isFinite(r.amp)) return 'Warming up: counting calls and the requests that reach the server…';
  const wasted = r.wasted > 0.05 ? ` ${Math.round(r.wasted * 100)} % of the backend's work right now is for requests the gateway has already answered with a 504.` : '';
  if (f?.running) {
    const left = Math.max(0, Math.ceil((f.endsAt - performance.now()) / 1000));
    const what = f.kind === 'outage'
      ? 'Full outage: the backend answers every request with a 503.'
      : `Brownout: the backend can serve ${fmt.rate(cap)} requests/s instead of 400.`;
    return `${what} Users still make ${fmt.rate(r.calls)} calls/s, and ${fmt.rate(r.arrivals)} requests/s reach the server under ${name}: ` +
      `${ampText} per call. ${WHY[S.strategy]}${wasted} (${left} s left)`;
  }
  if (f && f.endMs && serverNow() - f.endMs < 40_000) {
    const ago = Math.round((serverNow() - f.endMs) / 1000);
    const ff = faultFigures(f);
    if (ff.recovery != null || r.success >= 0.99) {
      const rec = ff.recovery != null ? `: recovered ${ff.recovery.toFixed(1)} s after the end` : '';
      return `The ${f.kind} ended ${ago} s ago and ${fmt.pct(r.success)} of calls succeed again${rec}. ` +
        `During the fault the server got ${fmt.amp(ff.amp)} requests per call.`;
    }
    if (ago < 3) {
      return `The ${f.kind} ended ${ago} s ago; ${fmt.pct(r.success)} of calls succeed so far, and ${fmt.rate(r.arrivals)} requests/s reach a ` +
        `server that can serve ${fmt.rate(cap)}.`;
    }
    const br = S.breakersNow;
    if (br && br.open + br.half > 0 && !(r.arrivals > cap * 0.9)) {
      return `The ${f.kind} ended ${ago} s ago, but only ${fmt.pct(r.success)} of calls succeed: ${br.open + br.half} of ${br.n} clients still ` +
        `have their breaker open or half-open, so they fail calls at once without sending anything (${fmt.rate(r.arrivals)} requests/s reach ` +
        `a server that could serve ${fmt.rate(cap)}) until their open period ends and a probe gets through.`;
    }
    if (r.arrivals > cap * 0.9) {
      return `The ${f.kind} ended ${ago} s ago, but only ${fmt.pct(r.success)} of calls succeed: ${fmt.rate(r.arrivals)} requests/s still reach a ` +
        `server that can serve ${fmt.rate(cap)}.${wasted} The cause is gone and the outage stays: a metastable failure, kept alive by retries.`;
    }
    return `The ${f.kind} ended ${ago} s ago; ${fmt.pct(r.success)} of calls succeed so far, with ${fmt.rate(r.arrivals)} requests/s reaching a ` +
      `server that can serve ${fmt.rate(cap)}.`;
  }
  return `All normal: ${S.n} clients make ${fmt.rate(r.calls)} calls/s and the server receives ${fmt.rate(r.arrivals)} requests/s (${ampText}); ` +
    `it can serve ${fmt.rate(cap)}. Press Brownout to cut its capacity to 30 % for ${$('fault-len').value} s, or Full outage.`;
}

function renderFigures() {
  const r = recent();
  setFig('fig-calls', fmt.rate(r.calls));
  setFig('fig-arrivals', fmt.rate(r.arrivals), level(r.arrivals, capacityNow(), capacityNow() * 1.5));
  setFig('fig-amp', fmt.amp(r.amp), level(r.amp, 1.15, 1.6));
  setFig('fig-success', fmt.pct(r.success), level(r.success, 0.99, 0.8, false));
  setFig('fig-p95', fmt.ms(r.p95), level(r.p95, 300, 1500));
  $('fig-breakers').querySelector('.k').textContent = hasBreaker(S.strategy)
    ? 'clients with an open breaker' : `clients with an open breaker (${LABELS[S.strategy] ?? S.strategy} has none)`;
  if (!hasBreaker(S.strategy)) setFig('fig-breakers', '–');
  else if (S.breakersNow) setFig('fig-breakers', `${S.breakersNow.open} / ${S.breakersNow.n}`, S.breakersNow.open ? 'warn' : '');
  $('explain').textContent = explain(r);
  const lagNote = $('lag-note');
  const busy = r.lag >= 100;
  const held = r.held >= 25;
  lagNote.textContent = `The page's own timers ran up to ${Math.round(r.lag)} ms late` +
    (held ? `, and the browser held back up to ${Math.round(r.held)} requests for want of a free connection` : '') +
    (busy || held
      ? ': this browser, not only the server, limits what you see; fewer clients would be more faithful.'
      : ': the page keeps its schedule.');
  lagNote.dataset.level = busy || held ? 'bad' : '';
  const f = S.fault;
  const st = $('server-state');
  if (f?.running) {
    const left = Math.max(0, Math.ceil((f.endsAt - performance.now()) / 1000));
    st.textContent = `backend: ${f.kind === 'outage' ? 'full outage' : 'brownout, 30 % capacity'} · ${left} s left`;
    st.dataset.state = f.kind;
  } else {
    st.textContent = S.cap ? `backend: normal · ${S.cap.slots} slots × ${S.cap.serviceMs} ms = ${fmt.rate(capacityNow())} requests/s` : 'backend: …';
    st.dataset.state = 'normal';
  }
  for (const b of document.querySelectorAll('.fault-btn')) b.disabled = Boolean(f?.running);
  return r;
}

function renderRuns() {
  const body = $('runs').tBodies[0];
  const rows = S.faults.map((f) => {
    const ff = faultFigures(f);
    const tr = document.createElement('tr');
    tr.dataset.strategy = f.strategy;
    tr.dataset.kind = f.kind;
    tr.dataset.amp = Number.isFinite(ff.amp) ? ff.amp.toFixed(3) : '';
    tr.dataset.done = String(!f.running);
    tr.dataset.mixed = String(Boolean(f.mixed));
    tr.dataset.success = Number.isFinite(ff.success) ? ff.success.toFixed(4) : '';
    tr.dataset.recovery = ff.recovery == null ? '' : String(ff.recovery);
    const mixed = f.mixed ? ' (changed mid-fault)' : '';
    const cells = [
      (LABELS[f.strategy] ?? f.strategy) + mixed,
      `${f.kind} ${f.lenMs / 1000} s, ${f.clients} clients`,
      fmt.amp(ff.amp),
      Number.isFinite(ff.peak) ? `${ff.peak.toFixed(1)}×` : '–',
      fmt.pct(ff.success),
      ff.recoveryText,
    ];
    cells.forEach((c, i) => {
      const td = document.createElement('td');
      td.textContent = c;
      if (i === 2) td.dataset.level = level(ff.amp, 1.15, 1.6);
      tr.append(td);
    });
    return tr;
  });
  body.replaceChildren(...rows.reverse());
  $('runs-empty').hidden = rows.length > 0;
}

function anyBreakerOpen(from, to) {
  for (let s = from; s < to; s++) if ((get(s)?.brOpen ?? 0) + (get(s)?.brHalf ?? 0) > 0) return true;
  return false;
}

function renderCharts() {
  const to = curSec();
  const from = to - WINDOW_S;
  const v = (key) => (s) => get(s)?.[key] ?? null;
  const bands = S.faults
    .map((f) => ({ from: f.startMs / 1000, to: (f.endMs ?? serverNow()) / 1000, color: FAULT_COLORS[f.kind] }));
  const capLine = (s) => {
    const b = get(s);
    if (!b || b.slots == null) return null;
    const f = S.faults.find((x) => s >= Math.floor(x.startMs / 1000) && s < Math.ceil((x.endMs ?? Infinity) / 1000));
    return f?.kind === 'outage' ? 0 : (b.slots * 1000) / (S.cap?.serviceMs ?? 50);
  };
  drawChart($('c-load'), {
    from, to, bands,
    series: [
      { values: v('calls'), color: '#1c7ed6' },
      { values: v('srvArrivals'), color: '#d9480f', fill: 'rgba(217, 72, 15, 0.08)' },
    ],
    lines: [{ values: capLine, color: '#495057' }],
  });
  drawChart($('c-amp'), {
    from, to, bands,
    format: (y) => `${y.toFixed(y < 10 ? 1 : 0)}×`,
    series: [{ values: (s) => { const b = get(s); return b && b.calls && b.srvArrivals != null ? b.srvArrivals / b.calls : null; }, color: '#d9480f' }],
    lines: [{ values: () => 1, color: '#495057' }],
  });
  drawChart($('c-success'), {
    from, to, bands, yMax: 100,
    format: (y) => `${Math.round(y)} %`,
    series: [
      { values: (s) => { const b = get(s); const n = b ? b.srvOk + b.srvFailed : 0; return n > 0 ? (100 * b.srvOk) / n : null; }, color: '#adb5bd' },
      { values: (s) => { const b = get(s); const n = b ? b.ok + b.fail : 0; return n ? (100 * b.ok) / n : null; }, color: '#2b8a3e' },
    ],
  });
  drawChart($('c-latency'), {
    from, to, bands,
    format: (y) => (y >= 1000 ? `${(y / 1000).toFixed(1)} s` : `${Math.round(y)}`),
    series: [
      { values: (s) => { const b = get(s); return b?.lat.length ? pct(b.lat, 0.5) : null; }, color: '#b197fc' },
      { values: (s) => { const b = get(s); return b?.lat.length ? pct(b.lat, 0.95) : null; }, color: '#7048e8' },
    ],
  });
  const ceiling = Math.min(6 * servers.load.length, 256);
  drawChart($('c-inflight'), {
    from, to, bands,
    series: [
      { values: v('srvLoad'), color: '#868e96' },
      { values: v('heldMax'), color: '#c92a2a', width: 1.5 },
      { values: v('inflightMax'), color: '#e67700' },
    ],
    lines: [{ values: () => ceiling, color: '#c92a2a', noScale: true }],
  });
  drawChart($('c-breakers'), {
    from, to, bands, yMax: 100,
    format: (y) => `${Math.round(y)} %`,
    series: [
      { values: (s) => { const b = get(s); return b?.brOpen == null ? null : 100 * b.brOpen; }, color: 'rgba(224, 49, 49, 0.75)', stack: true },
      { values: (s) => { const b = get(s); return b?.brHalf == null ? null : 100 * b.brHalf; }, color: 'rgba(250, 176, 5, 0.8)', stack: true },
    ],
    empty: !hasBreaker(S.strategy) ? `${LABELS[S.strategy] ?? S.strategy} has no circuit breaker`
      : anyBreakerOpen(from, to) ? undefined : 'every breaker closed',
  });
}

function render() {
  renderFigures();
  renderRuns();
  renderCharts();
  $('clients-value').textContent = String(S.n);
  for (const b of document.querySelectorAll('#strategies button')) b.setAttribute('aria-checked', String(b.dataset.strategy === S.strategy));
  $('strategy-desc').textContent = SHORT[S.strategy];
  const k = servers.load.length;
  const per = Math.ceil(S.n / k);
  const host = new URL(servers.load[0]).hostname;
  $('arrangement').innerHTML = '';
  $('arrangement').append(k > 1
    ? `Connections: the ${S.n} virtual clients are spread over ${k} ports of ${host} (at most ${per} per port), every port the same ` +
      `fault server with one shared capacity. Chromium opens at most 6 HTTP/1.1 connections per origin (scheme, host and port), so ` +
      `with one port the browser would allow 6 requests at once and its own queue, not the server, would be what these charts show. ` +
      `Across all origins Chromium allows ${Math.min(6 * k, 256)} connections (the dashed red line on the in-flight chart); the solid red ` +
      `line counts requests the page has started that have not reached the server yet: when it rises, the browser is part of what you see.`
    : `Warning: only one port is known (open the page through npm start, or add ?ports=…), so every virtual client shares Chromium's ` +
      `6 connections for this origin: the browser's own queue, not the server, limits what you see.`);
  $('arrangement').dataset.ports = String(k);
}

// ---------------------------------------------------------------- controls
for (const s of STRATEGIES) {
  const b = document.createElement('button');
  b.dataset.strategy = s;
  b.setAttribute('role', 'radio');
  b.textContent = LABELS[s] ?? s;
  b.onclick = () => {
    if (S.strategy === s) return;
    S.strategy = s;
    S.breakersNow = null;
    render();
    rebuild();
  };
  $('strategies').append(b);
}
$('clients').value = String(S.n);
$('clients').oninput = () => ($('clients-value').textContent = $('clients').value);
$('clients').onchange = () => {
  S.n = Number($('clients').value);
  rebuild();
};
$('period').value = String(S.periodMs);
if ($('period').value !== String(S.periodMs)) {
  $('period').add(new Option(`${S.periodMs / 1000} s`, String(S.periodMs)));
  $('period').value = String(S.periodMs);
}
$('period').onchange = () => {
  S.periodMs = Number($('period').value);
  const t = performance.now();
  for (const vc of S.clients) vc.next = t + Math.random() * S.periodMs;
};
$('brownout').onclick = () => startFault('brownout');
$('outage').onclick = () => startFault('outage');
$('forget').onclick = () => layout?.forget();

const versions = servers.versions ?? {};
$('versions').textContent = `ky ${versions.ky ?? '?'}, cockatiel ${versions.cockatiel ?? '?'}`;
for (const s of STRATEGIES) {
  const dt = document.createElement('dt');
  dt.textContent = LABELS[s] ?? s;
  const dd = document.createElement('dd');
  dd.textContent = DESCRIPTIONS[s] ?? SHORT[s];
  $('definitions').append(dt, dd);
}

// ---------------------------------------------------------------- start
// A page left mid-fault (closed, reloaded) must not leave the backend broken.
document.body.dataset.phase = 'reset capacity';
applyCap(await control('/_capacity', { mode: 'normal' }));

document.body.dataset.phase = 'layout panel';
$('layout-options').textContent = 'This screen\'s client: createClient() with the defaults. A failed call is retried after ' +
  'a random wait of up to 1 s, then up to 2 s, within a budget of 3 retries plus 10 % of the calls in any 10 s; after 3 failures ' +
  'in a row the breaker opens and the screen sends nothing for 2 s, then one probe: at most one request per 2 s through an ' +
  'outage, and the live layout back within about 2 s of the backend.';
const layout = await startLayoutPanel($('layout-panel'), {
  createClient,
  onCall: () => {
    bucket(curSec()).calls++;
    S.totalCalls++;
  },
}).catch((e) => {
  fatal(`schema panel: ${e?.message ?? e}`);
  return null;
});

// The layout client's engine, live (stormguard/devtools): loaded and mounted only while the box is
// open, so a closed box costs nothing.
if (layout?.client) {
  const details = $('devtools');
  let unmount = null;
  const sync = async () => {
    if (details.open && !unmount) {
      const { mountDevtools } = await import('/pkg/devtools.js');
      if (details.open && !unmount) unmount = mountDevtools(layout.client, $('devtools-box'));
    } else if (!details.open && unmount) {
      unmount();
      unmount = null;
    }
  };
  details.addEventListener('toggle', sync);
  sync().catch((e) => fatal(`devtools: ${e?.message ?? e}`));
}

document.body.dataset.phase = 'clients';
await rebuild();
setInterval(() => {
  sampleBreakers();
  render();
}, 500);
window.addEventListener('resize', renderCharts);
document.body.dataset.phase = 'running';
document.body.dataset.ready = 'true';

// For tests and the curious: the live state.
window.demo = {
  get strategy() { return S.strategy; },
  get clients() { return S.clients.length; },
  runs: () => S.faults.map((f) => ({ strategy: f.strategy, kind: f.kind, running: f.running, ...faultFigures(f) })),
  recent,
  layout: () => layout?.state(),
  servers: servers.load,
};
