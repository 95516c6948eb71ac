// Hedged requests against a long-tail backend: 95 % of answers in 20 ms,
// 5 % in 1 s (the fault server's /tail, drawn per request). Raw fetch, ky,
// stormguard with its defaults (no hedging) and stormguard with
// `hedge: { afterMs: 'p95' }` and with a fixed `afterMs: 100` each make the
// same calls, four at a time, in headless Chromium, in blocks that
// alternate between them; per strategy: p50 / p99 latency and
// amplification (requests the server saw per call, from its own log).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openBenchPage } from './browser.mjs';
import { buildDir, summarize } from './lib.mjs';
import { measureSizes } from './size.mjs';

// Four calls at a time: a hedge takes a concurrency slot only if one is free
// at once (never queued), and stormguard's default is 6 slots; at six calls
// at a time every slot is busy and no hedge ever goes out.
const CONCURRENCY = 4;

export const HEDGE_STRATEGIES = ['raw', 'ky', 'stormguard', 'stormguard hedge p95', 'stormguard hedge 100 ms'];

/** Runs inside the page (serialized by page.evaluate). */
async function inPage({ origin, n, block, concurrency, names, tail }) {
  const { libs, makeStrategies } = window.bench;
  const f = makeStrategies(libs);
  const make = {
    raw: () => f.raw(),
    ky: () => f.ky(),
    stormguard: () => f.stormguard(),
    'stormguard hedge p95': () => f.stormguard({ hedge: { afterMs: 'p95' } }),
    'stormguard hedge 100 ms': () => f.stormguard({ hedge: { afterMs: 100 } }),
  };
  const clients = {};
  for (const name of names) clients[name] = await make[name]();
  const samples = Object.fromEntries(names.map((x) => [x, []]));
  let seq = 0;
  // Each strategy logs under its own id, so the server's count is its amplification.
  const url = (name) => `${origin}/tail?${tail}&id=hedge-${encodeURIComponent(name)}&n=${seq++}`;
  // Warm-up: the p95 strategy needs 20 answers before it hedges at all.
  for (const name of names) for (let i = 0; i < 30; i++) await clients[name].call(url(name)).catch(() => {});
  const warm = Object.fromEntries(names.map((x) => [x, 30]));
  const rounds = Math.ceil(n / block);
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(j + r) % names.length];
      let left = Math.min(block, n - r * block);
      const worker = async () => {
        while (left > 0) {
          left--;
          const t = performance.now();
          await clients[name].call(url(name)).catch(() => {});
          samples[name].push(performance.now() - t);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    }
  }
  const stats = {};
  for (const name of names) {
    if (name.startsWith('stormguard')) stats[name] = clients[name].stats();
    clients[name].close();
  }
  return { samples, stats, warm };
}

export async function runHedge({ quick, names = HEDGE_STRATEGIES, log = console.log } = {}) {
  const n = quick ? 150 : 2000;
  const tail = 'p=0.05&fast=20&slow=1000';
  if (!existsSync(join(buildDir, 'size/stormguard.min.js'))) await measureSizes({ log: () => {} });
  const { site, page, close } = await openBenchPage('overhead', 'hedge');
  try {
    log(`[hedge] ${n} calls per strategy at concurrency ${CONCURRENCY} against /tail (${tail}), blocks alternating`);
    const raw = await page.evaluate(inPage, { origin: site.url, n, block: quick ? 50 : 100, concurrency: CONCURRENCY, names, tail });
    const rows = {};
    for (const name of names) {
      const res = await fetch(`${site.url}/_stats?id=hedge-${encodeURIComponent(name)}`);
      const { count } = await res.json();
      const s = summarize(raw.samples[name]);
      const calls = raw.samples[name].length + raw.warm[name];
      rows[name] = { p50: s.median, p99: s.p99, mean: s.mean, calls, requests: count, amplification: count / calls, stats: raw.stats[name] ?? null };
      log(`[hedge]   ${name.padEnd(24)} p50 ${s.median.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  amplification ${(count / calls).toFixed(3)}`);
    }
    return { config: { n, tail, concurrency: CONCURRENCY }, rows };
  } finally {
    await close();
  }
}

/** The report's section: one row per strategy. */
export function hedgeSection(res) {
  const h = res.hedge;
  if (!h) return '';
  const rows = Object.entries(h.rows).map(([name, r]) =>
    `| ${name} | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.amplification.toFixed(3)} |`);
  return [
    '## Hedged requests on a long-tail backend',
    '',
    `${h.config.n} calls per strategy at concurrency ${h.config.concurrency} in headless Chromium against the fault ` +
      `server's \`/tail?${h.config.tail}\` (95 % of answers in 20 ms, 5 % in 1 s), blocks alternating between ` +
      'strategies. Amplification: requests the server logged per call (warm-up included).',
    '',
    '| strategy | p50 | p99 | amplification |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}
