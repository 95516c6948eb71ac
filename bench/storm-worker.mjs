// One storm run: the load generator for one strategy against one fault server
// (its own process, see server-proc.mjs). Started by storm.mjs with the run's
// config as JSON in argv[2]; reports { type: 'ready' } and later
// { type: 'result', ... } over IPC, then exits.
//
// Open loop: `clients` logical clients, each one strategy instance (one
// stormguard client, one cockatiel policy, ... per logical client, as each is
// a browser in reality), each firing its profile's calls (one, or a page's
// burst of parallel calls) every `periodMs` from a random phase whether or not
// its previous calls are still running.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { makeStrategies } from './strategies.mjs';
import { analyzeStorm } from './storm-metrics.mjs';

const cfg = JSON.parse(process.argv[2]);
// cockatiel adds an abort listener per call to one shared signal; with hundreds of policies that
// trips Node's listener-leak warning (harmless here: the listeners are removed as calls end)
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name !== 'MaxListenersExceededWarning') process.stderr.write(`${w.stack || w}\n`);
});
const base = cfg.url;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- every attempt of every strategy goes through the global fetch; count them per logical client
const realFetch = globalThis.fetch;
const inflight = new Int32Array(cfg.clients);
const maxInflight = new Int32Array(cfg.clients);
let attemptsSent = 0;
// send times of the attempts made while the client's breaker for that endpoint was open or half-open
// (its probes), for the probe load; the attempts sent while it was open (refused, for the engine),
// and those a tab's boot build sent before its engine was in
const trippedAttempts = [];
let sentWhileOpen = 0;
let bootSent = 0;
let stateOf = () => undefined;
let booting = () => false;
const CLIENT_RE = /[?&]c=(\d+)/;
globalThis.fetch = function countingFetch(input, init) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const m = CLIENT_RE.exec(url);
  if (!m) return realFetch(input, init);
  const i = Number(m[1]);
  attemptsSent++;
  const state = stateOf(i, url);
  if (state !== undefined && state !== 'closed') trippedAttempts.push(now());
  if (state === 'open') sentWhileOpen++;
  if (booting(i, url)) bootSent++;
  if (++inflight[i] > maxInflight[i]) maxInflight[i] = inflight[i];
  const done = () => {
    inflight[i]--;
  };
  const p = realFetch(input, init);
  p.then(done, done);
  return p;
};

async function control(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
  // Every control request is idempotent. On a busy machine a kept-alive connection can be closed by the
  // server just as it is reused (a late keep-alive timer), and undici reports that as "fetch failed":
  // try again on a new connection.
  // Likewise an empty 400 or 408: Node's own answer to a request it could not read in time, never the
  // fault server's (whose errors carry a JSON body).
  let res;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await realFetch(`${base}${path}`, init);
      if (res.ok) break;
      const text = await res.text();
      if ((res.status !== 400 && res.status !== 408) || text !== '' || attempt === 3) {
        throw new Error(`${path}: HTTP ${res.status} ${text}`);
      }
    } catch (e) {
      if (e.message.startsWith(`${path}: HTTP`)) throw e;
      if (attempt === 3) throw new Error(`${path}: ${e.message} (${e.cause?.code ?? e.cause?.message ?? 'no cause'})`);
    }
  }
  return res.json();
}

/** Server clock minus this process's performance.now(), from the fastest of a few round trips. */
async function clockOffset() {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < 7; i++) {
    const a = performance.now();
    const { now } = await control('/_time');
    const b = performance.now();
    if (b - a < best.rtt) best = { rtt: b - a, offset: now - (a + b) / 2 };
  }
  return best.offset;
}

async function loadLibs() {
  const libs = {};
  if (cfg.strategy === 'ky') libs.ky = (await import('ky')).default;
  if (cfg.strategy === 'cockatiel') libs.cockatiel = await import('cockatiel');
  if (cfg.strategy === 'stormguard') {
    // Each simulated client is a browser tab: a page's defaults, which createClient picks where
    // there is a `window` (a server's differ: README, "Frameworks and tools").
    globalThis.window ??= globalThis;
    // `label=stormguard{"pkg":"/path/to/pkg"}`: another build side by side (main's, a branch's);
    // `"tabs"` and `"engineMs"` as storm.mjs's TAB_VARIANTS give them
    const { pkg, tabs, engineMs, ...options } = cfg.strategyOptions ?? {};
    cfg.strategyOptions = options;
    cfg.tabs ??= tabs;
    cfg.engineMs ??= engineMs;
    const dir = pkg ?? '../pkg';
    ({ createClient: libs.createClient, createClientSync: libs.createClientSync } = await import(`${dir}/node.js`));
    if (cfg.tabs === 'cold') {
      // A tab still loading the package: its calls see a page (boot.js sends only there), and its
      // engine arrives `engineMs` after the tab opens. The realm's module is instantiated once (by
      // the first createClient); each tab's createClientSync waits for it as a page waits for its
      // download, compile and instantiate.
      globalThis.document ??= {};
      const { makeCreateClient } = await import(`${dir}/core.js`);
      const { Client, UserFnFlag, finish, imports } = await import(`${dir}/stormguard.js`);
      // the boot build, handed to makeCreateClient as the browser entry (index.js) hands it (a build
      // whose core.js imports boot.js itself takes no such argument)
      const { MAX_IN_FLIGHT: max, first, plan } = await import(`${dir}/boot.js`);
      const glue = { Client, UserFnFlag, finish, imports };
      await libs.createClient().then((c) => c.close());
      libs.createCold = () => makeCreateClient(() => sleep(cfg.engineMs).then(() => glue), { max, first, plan }).createClientSync;
    }
  }
  return libs;
}

let t0 = Infinity;
const now = () => performance.now() - t0;

/** When stormguard's per-client breakers opened, and how many were not closed when the fault ended. */
function breakerSummary(transitions, faultStart, faultEnd) {
  const firstOpen = [];
  let openAtEnd = 0;
  for (const list of transitions) {
    const first = list.find(([t, to]) => to === 'open' && t >= faultStart && t < faultEnd);
    if (first) firstOpen.push(first[0] - faultStart);
    const last = list.filter(([t]) => t < faultEnd).pop();
    if (last && last[1] !== 'closed') openAtEnd++;
  }
  firstOpen.sort((a, b) => a - b);
  return {
    clientsOpenedInFault: firstOpen.length / transitions.length,
    firstOpenMedianMs: firstOpen.length ? firstOpen[Math.floor(firstOpen.length / 2)] : null,
    notClosedAtFaultEnd: openAtEnd / transitions.length,
  };
}

async function run() {
  const libs = await loadLibs();
  const factories = makeStrategies(libs);
  const make = factories[cfg.strategy];
  if (!make) throw new Error(`unknown strategy ${cfg.strategy}`);
  const clients = [];
  if (!cfg.tabs) for (let i = 0; i < cfg.clients; i++) clients.push(await make(cfg.strategyOptions ?? {}, cfg.via, cfg.call));
  // stormguard's breaker transitions per client: [ms since t0, to]
  const transitions = Array.from({ length: cfg.clients }, () => []);
  // a tab per page load (storm.mjs, TAB_VARIANTS): the open ones by `${client}/${burst}`, and the
  // stats of those closed
  const tabs = new Map();
  const closedStats = {};
  const TAB_RE = /[?&]t=(\d+)/;
  const tabOf = (i, url) => tabs.get(`${i}/${TAB_RE.exec(url)?.[1]}`);
  const addStats = (s) => {
    for (const k of ['requests', 'attempts', 'retries', 'timeouts', 'failures', 'breakerOpens', 'budgetDenied', 'queueRejected', 'deduped']) {
      closedStats[k] = (closedStats[k] ?? 0) + s[k];
    }
  };
  const closeTab = (id) => {
    const tab = tabs.get(id);
    tabs.delete(id);
    addStats(tab.client.stats());
    tab.client.close();
  };
  function openTab(i, k) {
    const client = (cfg.tabs === 'cold' ? libs.createCold() : libs.createClientSync)(cfg.strategyOptions);
    const tab = { client, states: new Map(), ready: false };
    client.ready.then(() => { tab.ready = true; }, () => {});
    client.on('breaker', (e) => {
      transitions[i].push([now(), e.to]);
      tab.states.set(e.key, e.to);
    });
    tabs.set(`${i}/${k}`, tab);
    return tab;
  }
  if (cfg.tabs) {
    stateOf = (i, url) => tabOf(i, url)?.states.get(keyOf(url));
    booting = (i, url) => tabOf(i, url)?.ready === false;
  }
  const keyOf = cfg.call?.breakerKey === 'origin'
    ? (url) => new URL(url).origin
    : (url) => {
      const q = url.indexOf('?');
      return `GET ${q < 0 ? url : url.slice(0, q)}`;
    };
  if (cfg.strategy === 'stormguard' && !cfg.tabs) {
    // each client's breakers as the 'breaker' events leave them: key -> state
    const states = clients.map(() => new Map());
    clients.forEach((c, i) => c.client.on('breaker', (e) => {
      transitions[i].push([now(), e.to]);
      states[i].set(e.key, e.to);
    }));
    stateOf = (i, url) => states[i].get(keyOf(url));
  } else if (cfg.strategy === 'cockatiel') {
    // one breaker per policy (per logical client), whatever the endpoint
    stateOf = (i) => clients[i].breakerState();
  }

  await control('/_reset', {});
  await control('/_capacity', { defaults: true, resetCounters: true, ...cfg.capacity, mode: 'normal' });
  const offset = await clockOffset();
  process.send({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve)); // 'go': every run of a batch starts together
  const cpuGo = process.cpuUsage();

  const { clients: n, periodMs, warmupMs, faultMs, recoveryMs } = cfg;
  const total = warmupMs + faultMs + recoveryMs;
  const calls = []; // [client, start, end, ok, error name]
  let pending = 0;
  let settledAll = null;
  t0 = performance.now() + 100;

  const paths = cfg.calls;
  const bursts = new Int32Array(n);
  function fire(i) {
    if (!cfg.tabs) {
      for (const path of paths) fireOne(i, `${base}${path}&c=${i}`, clients[i].call);
      return;
    }
    // a new tab, closed a second after its calls are over and its engine is in (or failed)
    const k = bursts[i]++;
    const { client } = openTab(i, k);
    const ends = paths.map((path) => fireOne(i, `${base}${path}&c=${i}&t=${k}`, client.request));
    Promise.allSettled([...ends, client.ready]).then(() => sleep(1000)).then(() => closeTab(`${i}/${k}`));
  }
  function fireOne(i, url, call) {
    const rec = [i, now(), NaN, false, ''];
    calls.push(rec);
    pending++;
    return call(url).then(
      () => {
        rec[2] = now();
        rec[3] = true;
      },
      (e) => {
        rec[2] = now();
        rec[4] = (e && (e.name || e.code)) || 'Error';
      },
    ).finally(() => {
      if (--pending === 0 && settledAll) settledAll();
    });
  }
  // one timer chain per client, at absolute times phase + k * period
  for (let i = 0; i < n; i++) {
    const phase = cfg.stratified ? ((i + Math.random()) / n) * periodMs : Math.random() * periodMs;
    let k = 0;
    const tick = () => {
      fire(i);
      k++;
      const next = phase + k * periodMs;
      if (next < total) setTimeout(tick, Math.max(0, next - now()));
    };
    setTimeout(tick, Math.max(0, phase - now()));
  }

  const loop = monitorEventLoopDelay({ resolution: 10 });
  await sleep(Math.max(0, t0 - performance.now()));
  loop.enable();
  const cpu0 = process.cpuUsage();

  // the fault, switched on the server; its window is taken at the midpoint of each control round trip
  await sleep(Math.max(0, warmupMs - now()));
  const fault = cfg.fault === 'outage'
    ? { mode: 'outage' }
    : { mode: 'brownout', factor: cfg.factor ?? 0.3 };
  let a = now();
  await control('/_capacity', fault);
  const faultStart = (a + now()) / 2;
  await sleep(Math.max(0, faultStart + faultMs - now()));
  a = now();
  await control('/_capacity', { mode: 'normal' });
  const faultEnd = (a + now()) / 2;
  await sleep(Math.max(0, total - now()));
  const runEnd = now();
  const cpu = process.cpuUsage(cpu0);
  loop.disable();

  // let the calls still running finish (the drain cap counts the rest as failed)
  if (pending > 0) {
    await Promise.race([new Promise((r) => (settledAll = r)), sleep(cfg.drainMs)]);
  }
  const unsettled = pending;
  const cap = await control('/_capacity');
  const log = await control('/_log?id=storm');
  const toLocal = (t) => t - offset - t0; // server clock -> ms since t0
  const arrivals = Float64Array.from(log.filter((e) => !e.preflight).map((e) => toLocal(e.t)));

  let stats = null;
  if (cfg.strategy === 'stormguard') {
    for (const c of clients) addStats(c.stats());
    for (const id of [...tabs.keys()]) closeTab(id);
    stats = closedStats;
  }
  for (const c of clients) c.close();

  const errors = {};
  for (const c of calls) if (!c[3]) errors[c[4] || 'unsettled'] = (errors[c[4] || 'unsettled'] ?? 0) + 1;
  const rejectedAfterFault = calls.filter((c) => c[1] >= faultEnd && c[4] === 'CircuitOpenError').length;
  const breaker = cfg.strategy === 'stormguard' ? { ...breakerSummary(transitions, faultStart, faultEnd), rejectedAfterFault } : null;
  const metrics = analyzeStorm({
    calls, arrivals, faultStart, faultEnd, runEnd, deadlineMs: cfg.deadlineMs,
  });
  // probe load: attempts per second sent while the client's breaker was open or half-open, from 10 s into
  // the fault (the breakers have reacted) to its end, as a share of the baseline (outage: every attempt
  // reaches the server, answered 503 at once)
  let probeLoad = null;
  if (cfg.strategy === 'stormguard' || cfg.strategy === 'cockatiel') {
    const from = faultStart + Math.min(10_000, cfg.faultMs / 2);
    const n = trippedAttempts.filter((t) => t >= from && t < faultEnd).length;
    const perSecond = (n / (faultEnd - from)) * 1000;
    probeLoad = { from: from - faultStart, attempts: n, perSecond, share: perSecond / metrics.baselineRate };
  }
  const cpuSinceGo = process.cpuUsage(cpuGo);
  return {
    ...metrics,
    maxInflightPerClient: Math.max(...maxInflight),
    meanMaxInflightPerClient: maxInflight.reduce((s, v) => s + v, 0) / n,
    attemptsSent,
    sentWhileOpen,
    bootSent,
    serverArrivals: arrivals.length,
    serverCounters: {
      arrivals: cap.arrivals, served: cap.served, rejected504: cap.rejected504, rejected503: cap.rejected503,
      resets: cap.resets, clientGone: cap.clientGone, shed: cap.shed, completed: cap.completed, wasted: cap.wasted,
    },
    errors,
    unsettled,
    libStats: stats,
    breaker,
    probeLoad,
    loadGen: {
      cpuMs: (cpu.user + cpu.system) / 1000,
      cpuSinceGoMs: (cpuSinceGo.user + cpuSinceGo.system) / 1000,
      wallMs: runEnd,
      cpuShare: (cpu.user + cpu.system) / 1000 / runEnd,
      loopDelayP99Ms: loop.percentile(99) / 1e6 - 10, // lag beyond the 10 ms sampling interval
      loopDelayMaxMs: loop.max / 1e6 - 10,
    },
  };
}

try {
  const result = await run();
  process.send({ type: 'result', result }, () => process.exit(0));
} catch (e) {
  process.send({ type: 'result', error: String(e && e.stack || e) }, () => process.exit(1));
}
