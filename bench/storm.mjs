// The storm benchmark of ../shared/BENCHMARKS.md: for each scenario, every
// strategy's run starts at the same moment, each with its own fault server
// process and its own load generator process (storm-worker.mjs), so the runs
// see the same machine noise and none can slow another's server.
import os from 'node:os';
import { join } from 'node:path';
import { benchDir, busyCoresSince, cpuSnapshot, forkNode, ask, waitExit } from './lib.mjs';
import { STORM_STRATEGIES } from './strategies.mjs';

export const SCENARIOS = [
  { name: 'outage', label: 'outage', fault: 'outage', shed: false },
  { name: 'brownout', label: 'brownout to 30 %', fault: 'brownout', factor: 0.3, shed: false },
  { name: 'brownout-shed', label: 'brownout to 30 %, server sheds', fault: 'brownout', factor: 0.3, shed: 'early' },
];

/** The BENCHMARKS.md set-up; --quick keeps the load at 0.75 of capacity with 120 clients and shorter phases. */
export function stormConfig(quick) {
  return quick
    ? { clients: 120, periodMs: 1000, warmupMs: 3000, faultMs: 4000, recoveryMs: 6000, drainMs: 5000,
        capacity: { c: 8, serviceMs: 50, gatewayMs: 1000, queue: 80 }, deadlineMs: 20000 }
    : { clients: 300, periodMs: 1000, warmupMs: 10000, faultMs: 10000, recoveryMs: 20000, drainMs: 25000,
        capacity: { c: 20, serviceMs: 50, gatewayMs: 1000, queue: 200 }, deadlineMs: 20000 };
}

/**
 * Which runs share the machine. All seven at once would need more than this machine's 2 cores in
 * the full run (Node's fetch costs the load generator ~0.7 ms CPU per request), so the full run
 * splits them in two groups of about 1.2 cores each; stormguard runs beside "none" and cockatiel, the
 * rows its targets compare it with, and the schema() variant runs in a batch of its own after them. The
 * quick run (half the clients, no variants) runs all five together.
 */
export function defaultGroups(quick) {
  return quick
    ? [STORM_STRATEGIES]
    : [['stormguard', 'stormguard-proposed', 'none', 'cockatiel'], ['naive', 'ky', 'stormguard-minRetries1', 'stormguard-adaptive'], [SCHEMA_VARIANT]];
}

/** A strategy name, or `label=stormguard{json options}` for a stormguard variant. */
export function parseStrategy(spec) {
  const m = /^([\w.+-]+)=(\w+)(\{.*\})?$/.exec(spec);
  if (m) return { label: m[1], factory: m[2], options: m[3] ? JSON.parse(m[3]) : {} };
  if (VARIANTS[spec]) return { label: spec, factory: 'stormguard', options: VARIANTS[spec] };
  if (spec === SCHEMA_VARIANT) return { label: spec, factory: 'stormguard', options: {}, via: 'schema' };
  return { label: spec, factory: spec, options: {} };
}

/**
 * Variants of stormguard's defaults run beside them (full run only), so that RESULTS.md can say by how
 * much a default holds a figure back. `stormguard` itself is always createClient() with no options.
 */
export const VARIANTS = {
  // the retry budget's floor per client, 3 -> 1 (nothing else changed)
  'stormguard-minRetries1': { budget: { minRetries: 1 } },
  // the proposal: that, a first backoff spread over a second, and a breaker that opens after 3 failures
  // in a row for a constant 2 s
  'stormguard-proposed': {
    budget: { minRetries: 1 },
    retry: { baseDelayMs: 1000 },
    breaker: { consecutiveFailures: 3, openMs: 2000, maxOpenMs: 2000 },
  },
  // adaptive client-side throttling (issue 9) instead of the binary breaker, other defaults kept
  'stormguard-adaptive': { breaker: { mode: 'adaptive' } },
};

/**
 * The defaults again, each logical client polling through schema() instead of request(): what an app
 * gets from the last-good copy (the incident's cached UI schema) when it polls a document. Full run
 * only, in a batch of its own; the targets stay measured on request().
 */
export const SCHEMA_VARIANT = 'stormguard-schema';

async function startRun(strategy, scenario, base) {
  const server = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({})]);
  const spec = parseStrategy(strategy);
  const cfg = {
    ...base,
    strategy: spec.factory,
    strategyOptions: spec.options,
    via: spec.via,
    fault: scenario.fault,
    factor: scenario.factor,
    capacity: { ...base.capacity, shed: scenario.shed },
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

/**
 * @param {{ quick: boolean, strategies?: string[], scenarios?: string[], parallel?: number, log?: Function }} o
 */
export async function runStorm({ quick, strategies = quick ? STORM_STRATEGIES : [...STORM_STRATEGIES, ...Object.keys(VARIANTS), SCHEMA_VARIANT], scenarios, groups, overrides = {}, log = console.log }) {
  const base = { ...stormConfig(quick), ...overrides };
  const chosen = SCENARIOS.filter((s) => !scenarios || scenarios.includes(s.name));
  groups = (groups ?? defaultGroups(quick))
    .map((g) => g.filter((s) => strategies.includes(s)))
    .filter((g) => g.length);
  const runs = [];
  for (const scenario of chosen) {
    for (const group of groups) {
      log(`[storm] ${scenario.name}: ${group.join(', ')} (${base.clients} clients, ` +
        `${(base.warmupMs + base.faultMs + base.recoveryMs) / 1000} s each, side by side)`);
      const started = await Promise.all(group.map((s) => startRun(s, scenario, base)));
      await Promise.all(started.map((r) => ask(r.server, 'mark')));
      const snap = cpuSnapshot();
      const cpu0 = process.cpuUsage();
      for (const r of started) r.worker.send({ type: 'go' });
      const results = await Promise.all(started.map(finishRun));
      // the whole machine's busy cores over the batch, and how much of it was not this benchmark
      const machine = busyCoresSince(snap);
      const own = results.reduce((s, r) => s + r.loadGen.cpuSinceGoMs + r.server.cpuMs, 0) / (performance.now() - snap.at) +
        (process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1000 / (performance.now() - snap.at);
      const batch = { machineBusyCores: machine, otherCores: Math.max(0, machine - own) };
      for (const r of results) {
        r.group = group.map((g) => parseStrategy(g).label);
        r.batch = batch;
      }
      log(`[storm]   machine: ${machine.toFixed(2)} of ${os.cpus().length} cores busy, ${batch.otherCores.toFixed(2)} by other processes`);
      for (const r of results) {
        log(`[storm]   ${r.strategy.padEnd(12)} amp ${r.amplification.toFixed(2)}  peak ${r.peakRatio.toFixed(2)}x  ` +
          `recovery ${r.recoveryMs === null ? 'never' : (r.recoveryMs / 1000).toFixed(1) + ' s'}  ` +
          `success ${(100 * r.successFromFault).toFixed(1)} %  in-flight ${r.maxInflightPerClient}  ` +
          `cpu gen ${(100 * r.loadGen.cpuShare).toFixed(0)} % srv ${(100 * r.server.cpuShare).toFixed(0)} %  ` +
          `lag p99 gen ${r.loadGen.loopDelayP99Ms.toFixed(0)} ms srv ${r.server.loopDelayP99Ms.toFixed(0)} ms`);
      }
      runs.push(...results);
    }
  }
  return { config: base, scenarios: chosen, strategies, runs };
}
