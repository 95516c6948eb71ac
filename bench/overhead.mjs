// Per-call overhead in headless Chromium against the fault server on
// loopback: N sequential GETs per library, interleaved call by call, and N
// GETs at concurrency 6 per library in blocks that alternate between the
// libraries (the order rotates every round), so that machine noise hits all
// of them alike. Every URL is unique
// (stormguard's de-duplication never joins two calls).
//
// Then each library's own CPU time per call, with the network taken out: the
// page's global fetch replaced by a stub answering at once, calls timed in
// interleaved blocks. A loopback call's 4-8 ms hide a library's tens of µs;
// here they are all there is (a JS exception thrown and swallowed on every
// attempt, 25-30 µs, was found this way). One more stormguard row gives every
// call a path of its own, past the 1000 breakers a client keeps (per-id URLs
// on a long-lived client): what a new key at the table's cap costs.
import os from 'node:os';
import { openBenchPage } from './browser.mjs';
import { summarize } from './lib.mjs';
import { buildBundles, bundlePkg } from './size.mjs';
import { OVERHEAD_STRATEGIES } from './strategies.mjs';

/** Runs inside the page (serialized by page.evaluate). */
async function inPage({ origin, n, block, warmup, concurrency, names, path }) {
  const { libs, pkgs, makeStrategies } = window.bench;
  const make = {
    raw: (f) => f.raw(),
    stormguard: (f) => f.stormguard(),
    // every policy that can be switched off is: what is left is the path through the wasm boundary
    'stormguard-bare': (f) => f.stormguard({ retry: false, budget: false, breaker: false, concurrency: false, dedupe: false }),
    // the defaults without reading rate-limit fields: what reading them costs (not in the default run)
    'stormguard-no-ratelimit': (f) => f.stormguard({ rateLimit: false }),
    ky: (f) => f.ky(),
    cockatiel: (f) => f.cockatiel({ breaker: false }),
  };
  const clients = {};
  for (const name of names) {
    // `stormguard@before`: the row of another build (run.mjs --pkg=before=folder)
    const [base, label] = name.split('@');
    clients[name] = await make[base](makeStrategies(label ? { ...libs, createClient: pkgs[label] } : libs));
  }
  let seq = 0;
  const url = () => `${origin}${path}${path.includes('?') ? '&' : '?'}id=overhead&n=${seq++}`;
  const modes = ['sequential', 'concurrent'];
  const samples = {};
  const wall = {};
  for (const m of modes) {
    samples[m] = {};
    wall[m] = {};
    for (const name of names) {
      samples[m][name] = [];
      wall[m][name] = 0;
    }
  }
  for (const name of names) for (let i = 0; i < warmup; i++) await clients[name].call(url());

  const rounds = Math.ceil(n / block);
  for (let r = 0; r < rounds; r++) {
    const count = Math.min(block, n - r * block);
    // Sequential calls alternate one by one (the order rotating every call), so drift in the
    // machine's speed, which blocks of calls would catch unevenly, reaches every library alike.
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + j + r) % names.length];
        const t = performance.now();
        await clients[name].call(url());
        const dt = performance.now() - t;
        samples.sequential[name].push(dt);
        wall.sequential[name] += dt;
      }
    }
    // Six calls at a time need a block per library; the blocks alternate, rotating every round.
    for (let j = 0; j < names.length; j++) {
      const name = names[(j + r) % names.length];
      const c = clients[name];
      const out = samples.concurrent[name];
      let left = count;
      const worker = async () => {
        while (left > 0) {
          left--;
          const t = performance.now();
          await c.call(url());
          out.push(performance.now() - t);
        }
      };
      const t0 = performance.now();
      await Promise.all(Array.from({ length: concurrency }, worker));
      wall.concurrent[name] += performance.now() - t0;
    }
  }
  const stormguardStats = clients.stormguard ? clients.stormguard.stats() : null;
  for (const c of Object.values(clients)) c.close();
  return { samples, wall, isolated: globalThis.crossOriginIsolated === true, stormguardStats, userAgent: navigator.userAgent };
}

/** Runs inside the page: µs of CPU per call with a stub fetch, per library. */
async function cpuInPage({ names, rounds, block, warmup, perId, relative, withOptions }) {
  const { libs, pkgs, makeStrategies } = window.bench;
  const body = '{"ok":true,"n":12345}';
  const realFetch = globalThis.fetch;
  globalThis.fetch = async () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
  try {
    const f = makeStrategies(libs);
    const clients = {};
    for (const name of names) {
      if (name === withOptions) {
        const s = await f.stormguard();
        clients[name] = { call: (u) => s.client.request(u, { timeoutMs: 5000 }), close: s.close };
      } else if (name.includes('@')) {
        const [base, label] = name.split('@');
        clients[name] = await makeStrategies({ ...libs, createClient: pkgs[label] })[base]();
      } else clients[name] = [perId, relative].includes(name) ? await f.stormguard() : await f[name]();
    }
    let seq = 0;
    const url = (name) => name === perId ? `${location.origin}/item/${seq++}`
      : `${name === relative ? '' : location.origin}/item?n=${seq++}`;
    // past the breaker table's cap (1000 keys) for the per-id row, and warm for the others
    for (const name of names) for (let i = 0; i < warmup; i++) await clients[name].call(url(name));
    const samples = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(j + r) % names.length];
        const t = performance.now();
        for (let i = 0; i < block; i++) await clients[name].call(url(name));
        samples[name].push(((performance.now() - t) * 1000) / block);
      }
    }
    for (const c of Object.values(clients)) c.close();
    return samples;
  } finally {
    globalThis.fetch = realFetch;
  }
}

const PER_ID = 'stormguard, a path per call';
const RELATIVE = 'stormguard, relative URLs';
const WITH_OPTIONS = 'stormguard, { timeoutMs }';

/** CPU per call with the network taken out (see the top of this file). */
async function runCpu({ page, quick, pkgs, log }) {
  const cfg = {
    names: ['raw', 'stormguard', ...pkgs.map((p) => `stormguard@${p.label}`), 'ky', 'cockatiel', PER_ID, RELATIVE, WITH_OPTIONS],
    rounds: quick ? 10 : 40, block: 200, warmup: 1200,
    perId: PER_ID, relative: RELATIVE, withOptions: WITH_OPTIONS,
  };
  const samples = await page.evaluate(cpuInPage, cfg);
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  const raw = median(samples.raw);
  const out = { config: cfg, libs: {} };
  for (const [name, v] of Object.entries(samples)) {
    const m = median(v);
    out.libs[name] = { medianUs: m, minUs: Math.min(...v), overRawUs: m - raw };
    log(`[overhead]   cpu        ${name.padEnd(27)} ${m.toFixed(1).padStart(6)} µs a call (${(m - raw).toFixed(1)} over raw fetch)`);
  }
  return out;
}

// `path`: what every call fetches (by default a 200 with no rate-limit fields; e.g.
// '/ratelimit?quota=1000000000&window=3600' answers with the IETF fields on every call).
// `pkgs` ([{ label, dir }], run.mjs's --pkg=label=folder): other builds, run beside this one as
// `stormguard@<label>` and `stormguard-bare@<label>` (and a CPU row), interleaved with the others.
export async function runOverhead({ quick, pkgs = [], names, path = '/status/200', log = console.log } = {}) {
  names ??= [...OVERHEAD_STRATEGIES, 'stormguard-bare', ...pkgs.flatMap((p) => [`stormguard@${p.label}`, `stormguard-bare@${p.label}`])];
  const n = quick ? 200 : 2000;
  const cfg = { n, block: quick ? 50 : 100, warmup: quick ? 20 : 100, concurrency: 6, names, path };
  if (pkgs.length) await buildBundles(); // compared with pkg/ as it is now (else the start-up section's)
  for (const p of pkgs) await bundlePkg(p.label, p.dir);
  const query = pkgs.length ? `?pkgs=${pkgs.map((p) => p.label).join(',')}` : '';
  const { site, page, isolated, close } = await openBenchPage('overhead', 'overhead', query);
  try {
    log(`[overhead] ${n} sequential + ${n} at concurrency 6 per library, blocks of ${cfg.block}, ` +
      `alternating (${isolated ? 'cross-origin isolated: 5 µs timer' : 'timer clamped to 100 µs'})`);
    const raw = await page.evaluate(inPage, { origin: site.url, ...cfg });
    log(`[overhead] CPU per call, the network taken out (a stub fetch): blocks of 200 calls, interleaved`);
    const cpu = await runCpu({ page, quick, pkgs, log });
    const result = { config: cfg, isolated: raw.isolated, userAgent: raw.userAgent, stormguardStats: raw.stormguardStats, modes: {}, cpu };
    for (const [mode, byName] of Object.entries(raw.samples)) {
      const base = summarize(byName.raw ?? []);
      result.modes[mode] = {};
      for (const [name, values] of Object.entries(byName)) {
        const s = summarize(values);
        result.modes[mode][name] = {
          ...s,
          callsPerSecond: (values.length / raw.wall[mode][name]) * 1000,
          medianRatio: s.median / base.median,
          p99Ratio: s.p99 / base.p99,
          meanRatio: s.mean / base.mean,
        };
      }
      for (const name of names) {
        const r = result.modes[mode][name];
        log(`[overhead]   ${mode.padEnd(10)} ${name.padEnd(15)} median ${r.median.toFixed(3)} ms (x${r.medianRatio.toFixed(2)})  ` +
          `p99 ${r.p99.toFixed(3)} ms (x${r.p99Ratio.toFixed(2)})`);
      }
    }
    result.loadAverage = os.loadavg();
    for (const p of pkgs) log(sideBySide(result, p.label));
    return result;
  } finally {
    await close();
  }
}

/** This checkout's medians over `label`'s build (the same run), each as now / before. */
export function sideBySide(result, label) {
  const load = result.loadAverage ? `; load average ${result.loadAverage.map((x) => x.toFixed(1)).join(', ')} on ${os.cpus().length} cores` : '';
  const lines = [`[overhead] now / ${label}, medians of the same run (below 1: now is faster${load})`];
  const row = (what, a, b, unit, d) => {
    if (a === undefined || b === undefined) return;
    lines.push(`[overhead]   ${what.padEnd(42)} ${a.toFixed(d).padStart(8)} / ${b.toFixed(d).padStart(8)} ${unit} = x${(a / b).toFixed(2)}`);
  };
  for (const [mode, b] of Object.entries(result.modes)) {
    for (const base of ['stormguard', 'stormguard-bare']) {
      row(`${mode}, ${base}, median`, b[base]?.median, b[`${base}@${label}`]?.median, 'ms', 3);
      row(`${mode}, ${base}, x raw fetch`, b[base]?.medianRatio, b[`${base}@${label}`]?.medianRatio, '', 2);
    }
  }
  const cpu = result.cpu?.libs ?? {};
  row('CPU per call (stub fetch), stormguard', cpu.stormguard?.medianUs, cpu[`stormguard@${label}`]?.medianUs, 'µs', 1);
  return lines.join('\n');
}
