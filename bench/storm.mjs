// The storm benchmark (bench/README.md; the backend is the fault server's capacity
// model, tests/server/README.md): for each fault, fault length
// and client profile, the strategies of a batch start at the same moment, each
// with its own fault server process and its own load generator process
// (storm-worker.mjs), so the runs see the same machine noise and none can slow
// another's server.
//
// Faults last 3 s, 10 s and 60 s, and clients come in two profiles, so that no
// fixed setting (an open period, a backoff) can be tuned to one fault: the
// steady poller (one call a second per client) and a page load (a burst of 6
// parallel calls to 3 endpoints every 10 s per client).
import os from 'node:os';
import { join } from 'node:path';
import { benchDir, busyCoresSince, cpuSnapshot, fixed, forkNode, ask, pct, waitExit } from './lib.mjs';
import { STORM_STRATEGIES } from './strategies.mjs';

export const SCENARIOS = [
  { name: 'outage', label: 'outage', fault: 'outage', shed: false },
  { name: 'brownout', label: 'brownout to 30 %', fault: 'brownout', factor: 0.3, shed: false },
  { name: 'brownout-shed', label: 'brownout to 30 %, server sheds', fault: 'brownout', factor: 0.3, shed: 'early' },
];

/** Fault lengths of the full run; the quick run uses the first. */
export const FAULT_LENGTHS_MS = [3000, 10000, 60000];

/**
 * Client profiles. Each logical client fires every path of `calls` at once (in parallel) every `periodMs`,
 * open loop. The page-load profile has 500 clients so that its mean load (500 x 6 / 10 s = 300 calls/s)
 * equals the steady poller's (300 x 1/s): 0.75 of the backend's capacity in both. Its 3 endpoints are 3
 * paths (one breaker each in stormguard), 2 calls each with different queries (so nothing is
 * de-duplicated).
 */
export const PROFILES = {
  steady: {
    name: 'steady', label: 'steady poller (1 call/s per client)', clients: 300, periodMs: 1000,
    calls: ['/capacity?id=storm'],
  },
  'page-load': {
    name: 'page-load', label: 'page load (6 parallel calls to 3 endpoints every 10 s per client)', clients: 500, periodMs: 10000,
    calls: ['user', 'orders', 'stock'].flatMap((e) => [1, 2].map((n) => `/capacity/${e}?id=storm&n=${n}`)),
    // each client's phase drawn uniformly within its own 1/clients slice of the period, so the
    // per-second baseline is flat and the peak measures the strategy, not the draw of the phases
    stratified: true,
  },
};

/**
 * The full run's clients per profile, as a share of the full plan's 300 (steady) and 500 (page load):
 * all of them where the machine has 8 cores or more, fewer on a smaller one, with the backend's
 * capacity scaled the same way (so the load stays 0.75 of capacity and every fault hits as hard).
 * Measured on 2 cores (2026-12-01): at full scale a batch's load generators lagged by seconds (their
 * timers then fire calls and retries in bunches, and the figures measure the machine); at 0.4 five
 * stormguard runs side by side still needed 1.9 cores and lagged 0.7-2.3 s (page loads cost the
 * generator about 2 ms of CPU per call); at 0.25 the lag p99 was 14-19 ms with three runs side by
 * side and 49-92 ms with five.
 */
export const FULL_SCALE = Math.min(1, os.cpus().length / 8);

/** The storm's set-up (bench/README.md); --quick keeps the load at 0.75 of capacity with 120 clients and shorter phases. */
export function stormConfig(quick) {
  const k = FULL_SCALE;
  return quick
    ? { clientsScale: 0.4, warmupMs: 3000, recoveryMs: 6000, drainMs: 5000,
        capacity: { c: 8, serviceMs: 50, gatewayMs: 1000, queue: 80 }, deadlineMs: 20000 }
    : { clientsScale: k, warmupMs: 8000, recoveryMs: 15000, drainMs: 12000,
        capacity: { c: Math.round(20 * k), serviceMs: 50, gatewayMs: 1000, queue: Math.round(200 * k) }, deadlineMs: 20000 };
}

/**
 * A page load per tab (issue 39): each of a client's bursts is a new tab, a new client with no state
 * (its breakers, budget and latencies start empty), closed once its calls are over. `warm`: the engine
 * is in at once (createClientSync in a realm that has it); `cold`: the tab's calls go as they do in a
 * page still loading the package, through the boot build (pkg-template/boot.js), and its engine
 * arrives `engineMs` after the tab opens (storm-worker.mjs): what the engine's download (98.5 KB gzip),
 * compile and instantiate took in Chromium from the wasm's request to the client's `ready`, median of 7
 * fresh contexts (bench/engine-load.mjs, 2026-12-07, load 15 on 2 cores): 58 ms on loopback, 656 ms at
 * 1.6 Mbps / 150 ms RTT, 707 ms with the CPU 4x slower as well (again at load 24: 84, 667, 733 ms).
 */
export const TAB_VARIANTS = {
  'stormguard-tab': { tabs: 'warm' },
  'stormguard-cold': { tabs: 'cold', engineMs: 60 },
  'stormguard-cold-slow': { tabs: 'cold', engineMs: 700 },
};

/**
 * Variants of stormguard's defaults, run beside them so that RESULTS.md can say by how much a default
 * holds a figure back (the sensitivity table: 10 s faults, steady profile). `stormguard` itself is
 * always createClient() with no options.
 */
export const VARIANTS = {
  'stormguard-minRetries1': { budget: { minRetries: 1 } },
  // issue 26: no retry at all until the budget's ratio earns one (a page load's burst retries nothing)
  'stormguard-minRetries0': { budget: { minRetries: 0 } },
  // issue 26: client-side throttling instead of the open / half-open / closed circuit
  'stormguard-adaptive': { breaker: { mode: 'adaptive' } },
  'stormguard-consecutive1': { breaker: { consecutiveFailures: 1 } },
  'stormguard-consecutive5': { breaker: { consecutiveFailures: 5 } },
  'stormguard-maxOpen8000': { breaker: { maxOpenMs: 8000 } },
  'stormguard-maxOpen30000': { breaker: { maxOpenMs: 30000 } },
  // page loads: both calls of a burst to a half-open endpoint go through
  'stormguard-probes2': { breaker: { halfOpenProbes: 2 } },
  // page loads: one breaker for the backend (every call passes breakerKey: its origin), not one per path
  'stormguard-originKey': {},
  // hedged requests (issue 20): the budget must stop hedges in a brownout
  'stormguard-hedgeP95': { hedge: { afterMs: 'p95' } },
  'stormguard-hedge100': { hedge: { afterMs: 100 } },
};
/** Per-call settings of a variant, beside its client options. */
const VARIANT_CALLS = { 'stormguard-originKey': { breakerKey: 'origin' } };

/** Which default each variant changes, and its default value (for the sensitivity table). */
export const VARIANT_OF = {
  'stormguard-minRetries1': ['budget.minRetries', '3', '1'],
  'stormguard-minRetries0': ['budget.minRetries', '3', '0'],
  'stormguard-adaptive': ['breaker.mode', "'binary'", "'adaptive'"],
  'stormguard-consecutive1': ['breaker.consecutiveFailures', '3', '1'],
  'stormguard-consecutive5': ['breaker.consecutiveFailures', '3', '5'],
  'stormguard-maxOpen8000': ['breaker.maxOpenMs', '2000', '8000'],
  'stormguard-maxOpen30000': ['breaker.maxOpenMs', '2000', '30000'],
  'stormguard-probes2': ['breaker.halfOpenProbes', '1', '2'],
  'stormguard-originKey': ['breakerKey (per call)', 'METHOD origin+path', 'origin'],
  'stormguard-hedgeP95': ['hedge', 'false', "{ afterMs: 'p95' }"],
  'stormguard-hedge100': ['hedge', 'false', '{ afterMs: 100 }'],
};

/**
 * The defaults again, each logical client polling through schema() instead of request(): what an app
 * gets from the last-good copy (the incident's cached UI schema) when it polls a document. Full run
 * only, 10 s faults, steady profile; the targets stay measured on request().
 */
export const SCHEMA_VARIANT = 'stormguard-schema';

const BASE = ['none', 'cockatiel', 'stormguard'];
const SENSITIVITY = ['stormguard-minRetries1', 'stormguard-consecutive5', 'stormguard-maxOpen8000', 'stormguard-maxOpen30000'];

/**
 * The batches of a run: { faultMs, profile, strategies } per scenario, each batch's runs side by side.
 * No batch has more than five runs (see FULL_SCALE). naive and ky run at 10 s only, and in a batch of
 * their own: their retry storms cost their load generators several times the CPU of the others', which
 * on a small machine took it from the runs beside them (event-loop lag of seconds in the 10 s batches
 * of the 2026-12-01 run). The sensitivity variants run at 10 s on the steady profile (and the maxOpenMs
 * ones in the 60 s faults too, where a longer open period pays).
 */
export function defaultPlan(quick) {
  // The quick run (CI) keeps one page-load row beside the steady one (issue 26): the profile
  // where a library can do worse than none.
  if (quick) {
    return [
      { faultMs: FAULT_LENGTHS_MS[0], profile: 'steady', strategies: STORM_STRATEGIES },
      { faultMs: FAULT_LENGTHS_MS[0], profile: 'page-load', strategies: BASE },
    ];
  }
  const PAGE = ['stormguard-probes2', 'stormguard-originKey'];
  return [
    { faultMs: 3000, profile: 'steady', strategies: [...BASE, 'stormguard-consecutive1'] },
    { faultMs: 3000, profile: 'page-load', strategies: BASE },
    { faultMs: 10000, profile: 'steady', strategies: BASE },
    { faultMs: 10000, profile: 'steady', strategies: ['naive', 'ky'] },
    { faultMs: 10000, profile: 'steady', strategies: [...SENSITIVITY, SCHEMA_VARIANT] },
    { faultMs: 10000, profile: 'page-load', strategies: BASE },
    { faultMs: 10000, profile: 'page-load', strategies: ['naive', 'ky'] },
    { faultMs: 10000, profile: 'page-load', strategies: [...PAGE, 'stormguard-minRetries1', 'stormguard-hedgeP95', 'stormguard-hedge100'] },
    { faultMs: 60000, profile: 'steady', strategies: [...BASE, 'stormguard-maxOpen8000', 'stormguard-maxOpen30000'] },
    { faultMs: 60000, profile: 'page-load', strategies: [...BASE, ...PAGE] },
  ];
}

/** A strategy name, or `label=stormguard{json options}` for a stormguard variant. */
export function parseStrategy(spec) {
  const known = [...STORM_STRATEGIES, ...Object.keys(VARIANTS), ...Object.keys(TAB_VARIANTS), SCHEMA_VARIANT];
  if (!known.includes(spec) && !/^[\w.+-]+=stormguard(\{.*\})?$/.test(spec)) {
    throw new Error(`unknown storm strategy ${spec}; strategies: ${known.join(', ')}, or label=stormguard{json options}`);
  }
  const m = /^([\w.+-]+)=(\w+)(\{.*\})?$/.exec(spec);
  if (m) return { label: m[1], factory: m[2], options: m[3] ? JSON.parse(m[3]) : {} };
  if (VARIANTS[spec]) return { label: spec, factory: 'stormguard', options: VARIANTS[spec], call: VARIANT_CALLS[spec] };
  if (TAB_VARIANTS[spec]) return { label: spec, factory: 'stormguard', options: {}, ...TAB_VARIANTS[spec] };
  if (spec === SCHEMA_VARIANT) return { label: spec, factory: 'stormguard', options: {}, via: 'schema' };
  return { label: spec, factory: spec, options: {} };
}

/** `outage 10 s steady`: how a run is named in logs and tables. */
export const caseName = (r) => `${r.scenario} ${r.faultMs / 1000} s ${r.profile}`;

async function startRun(strategy, scenario, cfgBase) {
  const server = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({ logCap: 400_000 })]);
  const spec = parseStrategy(strategy);
  const cfg = {
    ...cfgBase,
    strategy: spec.factory,
    strategyOptions: spec.options,
    via: spec.via,
    call: spec.call,
    tabs: spec.tabs,
    engineMs: spec.engineMs,
    fault: scenario.fault,
    factor: scenario.factor,
    capacity: { ...cfgBase.capacity, shed: scenario.shed },
    url: server.ready.url,
  };
  const worker = await forkNode(join(benchDir, 'storm-worker.mjs'), [JSON.stringify(cfg)]);
  if (worker.ready.type !== 'ready') {
    await ask(server.child, 'close').catch(() => {});
    throw new Error(`storm run ${strategy}/${scenario.name} failed to start: ${worker.ready.error}`);
  }
  return { strategy, scenario, server: server.child, worker: worker.child };
}

async function finishRun(run) {
  const msg = await new Promise((resolve, reject) => {
    run.worker.once('message', resolve);
    run.worker.once('exit', (code) => reject(new Error(`storm worker (${run.strategy}) exited with ${code}`)));
  });
  const serverUsage = await ask(run.server, 'usage');
  await ask(run.server, 'close').catch(() => {});
  await waitExit(run.worker);
  if (msg.error) throw new Error(`storm run ${run.strategy}/${run.scenario.name}: ${msg.error}`);
  const spec = parseStrategy(run.strategy);
  return {
    strategy: spec.label,
    options: spec.options,
    via: spec.via ?? 'request',
    scenario: run.scenario.name,
    ...msg.result,
    server: {
      cpuMs: serverUsage.cpuMs,
      cpuShare: serverUsage.cpuMs / serverUsage.wallMs,
      loopDelayP99Ms: serverUsage.loopDelayP99Ms,
      loopDelayMaxMs: serverUsage.loopDelayMaxMs,
    },
  };
}

/** The config of one batch: the set-up, the profile's clients and calls, the fault's length. */
export function batchConfig(base, { faultMs, profile }) {
  const p = PROFILES[profile];
  if (!p) throw new Error(`unknown profile ${profile}; profiles: ${Object.keys(PROFILES).join(', ')}`);
  return {
    ...base,
    profile,
    clients: Math.round(p.clients * base.clientsScale),
    periodMs: p.periodMs,
    calls: p.calls,
    stratified: Boolean(p.stratified),
    faultMs,
  };
}

/**
 * The batches of `plan` at the lengths and profiles of `filter`, keeping the strategies it names. A
 * named strategy that the plan does not run at a chosen length and profile (a variant of VARIANTS, or
 * `label=stormguard{json}`) runs there too, in extra batches of at most five: `--lengths=10
 * --profiles=page-load --strategies=none,stormguard,stormguard-adaptive` compares any variant with the
 * defaults at one fault length.
 */
export function filterPlan(plan, filter = {}) {
  for (const s of filter.strategies ?? []) parseStrategy(s);
  const here = plan
    .filter((b) => !filter.lengths || filter.lengths.includes(b.faultMs))
    .filter((b) => !filter.profiles || filter.profiles.includes(b.profile));
  const out = here
    .map((b) => ({ ...b, strategies: b.strategies.filter((s) => !filter.strategies || filter.strategies.includes(s)) }))
    .filter((b) => b.strategies.length);
  if (!filter.strategies) return out;
  const cases = [...new Map(here.map((b) => [`${b.faultMs}/${b.profile}`, b])).values()];
  for (const { faultMs, profile } of cases) {
    const ran = new Set(here.filter((b) => b.faultMs === faultMs && b.profile === profile).flatMap((b) => b.strategies));
    const extra = filter.strategies.filter((s) => !ran.has(s));
    for (let i = 0; i < extra.length; i += 5) out.push({ faultMs, profile, strategies: extra.slice(i, i + 5) });
  }
  return out;
}

/**
 * @param {{ quick: boolean, plan?: object[], scenarios?: string[], filter?: { lengths?: number[], profiles?: string[],
 *   strategies?: string[] }, log?: Function }} o
 */
export async function runStorm({ quick, plan = defaultPlan(quick), scenarios, filter = {}, overrides = {}, log = console.log }) {
  const base = { ...stormConfig(quick), ...overrides };
  const chosen = SCENARIOS.filter((s) => !scenarios || scenarios.includes(s.name));
  plan = filterPlan(plan, filter);
  const runs = [];
  const failed = [];
  const configs = {};
  for (const scenario of chosen) {
    for (const batch of plan) {
      const cfg = batchConfig(base, batch);
      configs[`${batch.profile}/${batch.faultMs}`] = cfg;
      log(`[storm] ${scenario.name} ${batch.faultMs / 1000} s, ${batch.profile}: ${batch.strategies.join(', ')} (${cfg.clients} clients, ` +
        `${(cfg.warmupMs + cfg.faultMs + cfg.recoveryMs) / 1000} s each, side by side)`);
      // a batch that fails (a process that dies, a server that cannot be reached) is reported and the
      // run goes on: one lost batch should not cost the other twenty minutes of figures
      let results;
      const snap = cpuSnapshot();
      const cpu0 = process.cpuUsage();
      const startedAll = [];
      try {
        const started = await Promise.all(batch.strategies.map(async (s) => {
          const r = await startRun(s, scenario, cfg);
          startedAll.push(r);
          return r;
        }));
        await Promise.all(started.map((r) => ask(r.server, 'mark')));
        Object.assign(snap, cpuSnapshot());
        Object.assign(cpu0, process.cpuUsage());
        for (const r of started) r.worker.send({ type: 'go' });
        results = await Promise.all(started.map(finishRun));
      } catch (e) {
        log(`[storm]   batch failed: ${e.message}`);
        failed.push({ scenario: scenario.name, faultMs: batch.faultMs, profile: batch.profile, strategies: batch.strategies, error: String(e.message) });
        for (const r of startedAll) {
          r.worker.kill();
          r.server.kill();
        }
        continue;
      }
      // the whole machine's busy cores over the batch, and how much of it was not this benchmark
      const busy = busyCoresSince(snap);
      const machine = Number(busy);
      const own = results.reduce((s, r) => s + r.loadGen.cpuSinceGoMs + r.server.cpuMs, 0) / (performance.now() - snap.at) +
        (process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1000 / (performance.now() - snap.at);
      const batchInfo = { machineBusyCores: machine, otherCores: Math.max(0, machine - own), nicedCores: busy.niced, load: os.loadavg()[0] };
      for (const r of results) {
        r.faultMs = batch.faultMs;
        r.profile = batch.profile;
        r.group = batch.strategies.map((g) => parseStrategy(g).label);
        r.batch = batchInfo;
      }
      log(`[storm]   machine: ${machine.toFixed(2)} of ${os.cpus().length} cores busy, ${batchInfo.otherCores.toFixed(2)} by other processes ` +
        `(and ${busy.niced.toFixed(2)} at low priority)`);
      for (const r of results) {
        log(`[storm]   ${r.strategy.padEnd(24)} amp ${fixed(r.amplification)}  peak ${fixed(r.peakRatio)}x  ` +
          `recovery ${r.recoveryMs === null ? 'never' : fixed(r.recoveryMs / 1000, 1) + ' s'}  ` +
          `success ${pct(r.successFromFault)}  ` +
          `${r.probeLoad && r.faultMs >= 20000 ? `probe ${fixed(r.probeLoad.share)}  ` : ''}in-flight ${r.maxInflightPerClient}  ` +
          `sent ${r.attemptsSent} (while open ${r.sentWhileOpen}${r.bootSent ? `, boot ${r.bootSent}` : ''})  ` +
          `cpu gen ${pct(r.loadGen.cpuShare, 0)} srv ${pct(r.server.cpuShare, 0)}  ` +
          `lag p99 gen ${fixed(r.loadGen.loopDelayP99Ms, 0)} ms srv ${fixed(r.server.loopDelayP99Ms, 0)} ms`);
      }
      runs.push(...results);
    }
  }
  return { config: base, configs, failed, profiles: PROFILES, lengths: [...new Set(plan.map((b) => b.faultMs))].sort((a, b) => a - b), scenarios: chosen, plan, runs };
}
