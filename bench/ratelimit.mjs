// Rate limits: a server that enforces a quota per client (an API key per
// user, as most rate-limited APIs do) and announces it on every answer, with
// 429 beyond it. Each logical client polls faster than its quota allows; the
// row shows how many requests each strategy sends only to be refused.
//
//   K clients per strategy, each its own key: quota Q per window of W s,
//   one call every P ms (open loop, random phase) for D s, twice the quota.
//   Field forms: IETF (`RateLimit` + `RateLimit-Policy`) and GitHub's
//   `X-RateLimit-*` with an epoch reset (the one ky reads as a retry delay).
//
// The strategies run at the same time (one form after the other) against one
// fault server (tests/server, /ratelimit) in its own process; calls still
// waiting 3 s after the load stops are counted as unfinished and their
// clients closed.
//
// With `--quick` the run is 6 s of load, IETF fields only; the full run is
// 20 s per form and also measures what reading the fields costs per call (Node, a stubbed fetch, the
// same client with the per-call option on and off, and off against off as
// the noise floor).
import { join } from 'node:path';
import ky from 'ky';
import * as cockatiel from 'cockatiel';
import { benchDir, forkNode, ask, sleep, summarize, textTable, mdTable, pct, fixed } from './lib.mjs';
import { makeStrategies } from './strategies.mjs';

export const RATELIMIT_STRATEGIES = ['none', 'ky', 'cockatiel', 'stormguard'];
export const RATELIMIT_FORMS = { ietf: 'form=ietf', 'x-epoch': 'form=x&reset=epoch' };

async function loadStormguard() {
  return (await import(join(benchDir, '../pkg/node.js'))).createClient;
}

/** Runs one group (strategy x form): K open-loop clients until `stopAt`. */
async function runGroup({ strategy, form, f, origin, k, quota, windowS, periodMs, stopAt, drainAt }) {
  const id = `rl-${form}-${strategy}-${process.pid}`;
  const calls = [];
  const clients = [];
  for (let i = 0; i < k; i++) clients.push(await f[strategy]());
  const start = performance.now();
  const loops = clients.map(async (client, i) => {
    const url = `${origin}/ratelimit?id=${id}&key=c${i}&quota=${quota}&window=${windowS}&${RATELIMIT_FORMS[form]}`;
    await sleep(Math.random() * periodMs);
    let n = 0;
    while (performance.now() < stopAt) {
      const t = performance.now();
      const rec = { ok: false, settled: false, ms: 0, local: false };
      calls.push(rec);
      client
        .call(`${url}&n=${n++}`)
        .then(() => {
          rec.ok = true;
        })
        .catch((e) => {
          // failed without a request: stormguard's CircuitOpenError (a hold beyond the deadline)
          rec.local = e?.name === 'CircuitOpenError';
        })
        .finally(() => {
          rec.settled = true;
          rec.ms = performance.now() - t;
        });
      await sleep(Math.max(0, t + periodMs - performance.now()));
    }
  });
  await Promise.all(loops);
  while (performance.now() < drainAt && calls.some((c) => !c.settled)) await sleep(50);
  const unfinished = calls.filter((c) => !c.settled).length;
  for (const c of clients) c.close();
  const log = await (await fetch(`${origin}/_log?id=${id}`)).json();
  const arrivals = log.filter((e) => !e.preflight);
  const refused = arrivals.filter((e) => e.status === 429).length;
  const ok = calls.filter((c) => c.ok);
  return {
    strategy,
    form,
    seconds: (stopAt - start) / 1000,
    calls: calls.length,
    ok: ok.length,
    okShare: ok.length / calls.length,
    arrivals: arrivals.length,
    accepted: arrivals.filter((e) => e.status === 200).length,
    refused,
    refusedShare: refused / Math.max(1, arrivals.length),
    refusedPerCall: refused / calls.length,
    amplification: arrivals.length / calls.length,
    localFailures: calls.filter((c) => c.settled && !c.ok && c.local).length,
    unfinished,
    okLatency: summarize(ok.map((c) => c.ms)),
    allowedPerClient: (quota * (stopAt - start)) / 1000 / windowS,
  };
}

/** Per-call cost of reading the fields: one client, a stubbed fetch, the call option on vs off. */
async function readCost(createClient, { rounds, perRound }) {
  const fields = {
    none: {},
    ietf: { RateLimit: '"default";r=999999;t=3600', 'RateLimit-Policy': '"default";q=1000000;w=3600' },
  };
  const client = await createClient({ dedupe: false });
  const realFetch = globalThis.fetch;
  let headers = {};
  globalThis.fetch = async () => new Response('ok', { status: 200, headers });
  const out = {};
  try {
    for (const [name, h] of Object.entries(fields)) {
      headers = h;
      for (const [label, a, b] of [['on vs off', true, false], ['off vs off', false, false]]) {
        const t = { a: [], b: [] };
        for (let r = 0; r < rounds; r++) {
          for (const side of r % 2 ? ['a', 'b'] : ['b', 'a']) {
            const opts = { responseType: 'text', rateLimit: side === 'a' ? a : b };
            const t0 = performance.now();
            for (let i = 0; i < perRound; i++) await client.request('http://127.0.0.1/x', opts);
            t[side].push(((performance.now() - t0) / perRound) * 1000);
          }
        }
        const ma = summarize(t.a).median;
        const mb = summarize(t.b).median;
        out[`${name}: ${label}`] = { aUs: ma, bUs: mb, diffUs: ma - mb };
      }
    }
  } finally {
    globalThis.fetch = realFetch;
    client.close();
  }
  return out;
}

const HEAD = ['form', 'strategy', 'calls', 'ok', 'sent', 'refused (429)', 'refused/call', 'sent/call', 'failed locally', 'unfinished', 'ok p50'];
const cells = (r) => [r.form, r.strategy, r.calls, pct(r.okShare), r.arrivals, `${r.refused} (${pct(r.refusedShare)})`,
  fixed(r.refusedPerCall), fixed(r.amplification), r.localFailures, r.unfinished, `${fixed(r.okLatency.median, 0)} ms`];

/** RESULTS.md's section for the rate-limit row: the table printed by the run, and what reading the fields costs. */
export function rateLimitSection(res) {
  const rl = res.ratelimit;
  if (!rl) return '';
  const c = rl.config;
  let md = '## A rate-limited API: requests sent only to be refused\n\n' +
    `${c.k} clients per strategy, each with its own quota of ${c.quota} requests per ${c.windowS} s window (one API key per ` +
    `user), each calling once every ${c.periodMs} ms for ${c.seconds} s: twice what the quota allows. The fault server's ` +
    '`/ratelimit` answers 429 beyond the quota and announces it on every answer, in the IETF form (`RateLimit` + ' +
    '`RateLimit-Policy`) and in GitHub\'s `X-RateLimit-*` with an epoch reset. The strategies run side by side; calls still ' +
    `waiting ${c.drainS} s after the load stops are unfinished. "failed locally": stormguard refused the call without a ` +
    'request because the reset lies beyond its deadline (a `CircuitOpenError`, as for a Retry-After cooldown).\n\n' +
    mdTable(HEAD, rl.rows.map(cells)) + '\n';
  if (rl.readCost) {
    md += '\nWhat reading the fields costs per call (Node, a stubbed fetch, one client, the per-call `rateLimit` option on ' +
      'against off, and off against off as the noise floor):\n\n' +
      mdTable(['fields', 'a', 'b', 'a - b'], Object.entries(rl.readCost).map(([k, v]) =>
        [k, `${fixed(v.aUs, 1)} µs`, `${fixed(v.bUs, 1)} µs`, `${fixed(v.diffUs, 1)} µs`])) + '\n';
  }
  return md;
}

export async function runRateLimit({ quick, log = console.log } = {}) {
  const cfg = { k: 10, quota: 3, windowS: 2, periodMs: 333, seconds: quick ? 6 : 20, drainS: 3 };
  const forms = quick ? ['ietf'] : Object.keys(RATELIMIT_FORMS);
  const createClient = await loadStormguard();
  const f = makeStrategies({ ky, cockatiel, createClient });
  const server = await forkNode(join(benchDir, 'server-proc.mjs'), [JSON.stringify({})]);
  const origin = server.ready.url;
  log(`[ratelimit] ${cfg.k} clients per strategy and form, each its own quota of ${cfg.quota} per ${cfg.windowS} s, ` +
    `one call per ${cfg.periodMs} ms (2x the quota) for ${cfg.seconds} s; strategies side by side; forms ${forms.join(', ')}`);
  const rows = [];
  try {
    for (const form of forms) {
      const stopAt = performance.now() + 1000 + cfg.seconds * 1000; // a second to build the clients
      const drainAt = stopAt + cfg.drainS * 1000;
      const groups = RATELIMIT_STRATEGIES.map((strategy) => runGroup({ strategy, form, f, origin, ...cfg, stopAt, drainAt }));
      rows.push(...(await Promise.all(groups)));
    }
  } finally {
    await ask(server.child, 'close').catch(() => {});
  }
  const table = textTable(HEAD, rows.map(cells));
  for (const line of table.split('\n')) log(`[ratelimit] ${line}`);
  const result = { config: cfg, rows };
  if (!quick) {
    result.readCost = await readCost(createClient, { rounds: 40, perRound: 100 });
    for (const [k, v] of Object.entries(result.readCost)) {
      log(`[ratelimit] read cost, fields ${k}: ${v.aUs.toFixed(1)} vs ${v.bUs.toFixed(1)} µs/call (difference ${v.diffUs.toFixed(1)} µs)`);
    }
  }
  return result;
}
