// The blip benchmark (issue 42): a healthy, warm backend fails every request
// for a moment (100 ms, 300 ms, 1 s: a deploy, a load balancer restart, a
// dropped connection pool), with 503s or with connection resets, and is
// healthy again. 100 tabs (one strategy instance each, warmed by one page
// load) each load a page of 6 parallel calls over 3 endpoints at a random
// moment around it (from 200 ms before the blip to its end). Per strategy:
// success (calls of those pages that resolved with data), attempts per call
// (server arrivals of those pages / their calls) and the p95 page time (from a
// page's start until its last call settled).
//
//   node bench/blip.mjs [--quick] [--kinds=503,reset] [--lengths=100,300,1000] [--strategies=none,...]
//
// The fault server runs in a process of its own (server-proc.mjs); the tabs
// run in this one, one run after another.
import { join } from 'node:path';
import { benchDir, forkNode, fixed, pct, waitExit } from './lib.mjs';
import { makeStrategies, STORM_STRATEGIES } from './strategies.mjs';

const TABS = 100;
const PAGE = ['user', 'orders', 'stock'].flatMap((e) => [1, 2].map((n) => `/capacity/${e}?n=${n}`));
const LENGTHS_MS = [100, 300, 1000];
const KINDS = ['503', 'reset'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function loadLibs() {
  // Each tab is a browser tab: a page's defaults for stormguard (createClient picks them where
  // there is a `window`).
  globalThis.window ??= globalThis;
  return {
    ky: (await import('ky')).default,
    cockatiel: await import('cockatiel'),
    createClient: (await import('../pkg/node.js')).createClient,
  };
}

async function control(base, path, body) {
  const init = body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const res = await fetch(`${base}${path}`, init);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

/** One run: `strategy` against a blip of `lengthMs` of `kind`; the figures of its pages. */
async function runOne(factories, base, strategy, kind, lengthMs) {
  await control(base, '/_reset', {});
  // a backend with room for every page at once: only the blip fails calls
  await control(base, '/_capacity', { defaults: true, resetCounters: true, c: 1000, serviceMs: 5, queue: 10_000, gatewayMs: 5000, mode: 'normal' });
  const tabs = [];
  const lost = {};
  // `label=stormguard{json}`: a variant; its `pkg` (a folder) another build side by side (main's, a branch's)
  const m = /^[\w.+-]+=stormguard(\{.*\})?$/.exec(strategy);
  let make = factories[strategy];
  if (m) {
    const { pkg, ...options } = m[1] ? JSON.parse(m[1]) : {};
    const f = pkg ? makeStrategies({ createClient: (await import(`${pkg}/node.js`)).createClient }) : factories;
    make = () => f.stormguard(options);
  }
  for (let i = 0; i < TABS; i++) tabs.push(await make({}));
  const page = (tab, id) => {
    const start = performance.now();
    return Promise.all(PAGE.map((p) => tab.call(`${base}${p}&id=${id}`).then(() => true, (e) => {
      // why the call was lost: its error's name and, for stormguard, why no further retry went
      if (id === 'page') {
        const why = `${e?.name ?? 'Error'}${e?.retryDenied ? `/${e.retryDenied}` : ''}`;
        lost[why] = (lost[why] ?? 0) + 1;
      }
      return false;
    })))
      .then((oks) => ({ oks, ms: performance.now() - start }));
  };
  // warm: one page load each, spread over a second
  await Promise.all(tabs.map(async (t) => {
    await sleep(Math.random() * 1000);
    await page(t, 'warm');
  }));
  await sleep(500);
  const t0 = performance.now() + 200;
  const fault = { mode: 'outage', outageKind: kind === 'reset' ? 'reset' : 'status' };
  // the blip's length timed by the server: this process's timers run late under 100 tabs' load
  const blip = (async () => {
    await sleep(200);
    await control(base, '/_capacity', { ...fault, forMs: lengthMs });
  })();
  const pages = await Promise.all(tabs.map(async (t) => {
    await sleep(Math.max(0, t0 - 200 + Math.random() * (200 + lengthMs) - performance.now()));
    return page(t, 'page');
  }));
  await blip;
  const arrivals = (await control(base, '/_log?id=page')).filter((e) => !e.preflight).length;
  for (const t of tabs) t.close();
  const calls = pages.length * PAGE.length;
  const ok = pages.reduce((s, p) => s + p.oks.filter(Boolean).length, 0);
  const times = pages.map((p) => p.ms).sort((a, b) => a - b);
  return { strategy, kind, lengthMs, success: ok / calls, attemptsPerCall: arrivals / calls, p95PageMs: times[Math.ceil(0.95 * times.length) - 1], lost };
}

export async function runBlip({ quick = false, kinds = KINDS, lengths = LENGTHS_MS, strategies = STORM_STRATEGIES, log = console.log } = {}) {
  const factories = makeStrategies(await loadLibs());
  const { child, ready } = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({ close: true })]);
  const rows = [];
  try {
    // the quick run keeps one row per kind: 300 ms
    const ls = quick ? [300] : lengths;
    for (const kind of kinds) {
      for (const lengthMs of ls) {
        for (const s of strategies) {
          const r = await runOne(factories, ready.url, s, kind, lengthMs);
          rows.push(r);
          log(`[blip] ${kind} ${lengthMs} ms ${s.padEnd(10)} success ${pct(r.success)}  attempts/call ${fixed(r.attemptsPerCall, 2)}  p95 page ${Math.round(r.p95PageMs)} ms  lost ${JSON.stringify(r.lost)}`);
        }
      }
    }
  } finally {
    child.send({ type: 'close' });
    await waitExit(child);
  }
  return { tabs: TABS, page: PAGE, rows };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const list = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3).split(',');
  await runBlip({
    quick: args.includes('--quick'),
    kinds: list('kinds'),
    lengths: list('lengths')?.map(Number),
    strategies: list('strategies'),
  });
}

/** RESULTS.md's blip table. */
export function blipSection(res) {
  const b = res.blip;
  if (!b) return '';
  return [
    '## A blip on a healthy, warm backend (issue 42)',
    '',
    `${b.tabs} tabs, each warmed by one page load, each loading a page of ${b.page.length} parallel calls over 3 endpoints ` +
      'at a random moment from 200 ms before the blip to its end; the backend fails every request (503, or a connection ' +
      'reset) for the blip, then is healthy. Success: calls of those pages that resolved with data; attempts per call: ' +
      'server arrivals of those pages / their calls; p95 page time: from a page\'s start until its last call settled.',
    '',
    '| blip | strategy | success | attempts per call | p95 page time |',
    '|---|---|---|---|---|',
    ...b.rows.map((r) => `| ${r.kind} ${r.lengthMs} ms | ${r.strategy} | ${pct(r.success)} | ${fixed(r.attemptsPerCall, 2)} | ${Math.round(r.p95PageMs)} ms |`),
  ].join('\n');
}
