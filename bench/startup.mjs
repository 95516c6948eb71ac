// Start-up in Chromium: from import() of the library's bundle to a client
// ready for its first call, cold and warm. Cold: a fresh browser context (a
// fresh HTTP cache, no V8 code cache) for every first load. Warm: the same
// page loaded again in that context, so the bundle (and stormguard's wasm)
// come from the HTTP cache and V8 may use what it cached of their code (the
// static files are served cacheable here). The libraries' loads alternate,
// so machine noise hits them alike. `stormguard+preload` is stormguard on a
// page whose HTML preloads the wasm (README, "Preloading the wasm").
//
// stormguard's client is usable at once (createClientSync) and ready when its engine is in: the page
// times both (clientMs, readyMs). `stormguard+call` makes a request() at once, as an app's first
// render does, and times its answer (the boot build's attempt, or the engine's once it is in).
// Then Node, cold: a process per load (bench/startup-node.mjs), import() of the Node entry to the
// client, to `ready` and to the answer of a request() made at once.
//
// Another build beside this one: `pkgs` ([{ label, dir }], run.mjs's --pkg=label=folder) adds
// `stormguard@<label>` rows (and +call, and Node's) whose loads alternate with this checkout's, so
// a change's start-up is measured against the build before it in the same run.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { launchChromium, startSite } from './browser.mjs';
import { benchDir, root, summarize } from './lib.mjs';
import { buildBundles, bundlePkg, pkgsFromArgs } from './size.mjs';

export const STARTUP_LIBS = ['stormguard', 'stormguard+preload', 'ky', 'cockatiel', 'ofetch', 'axios'];

/** One load of `page` (already in its context): the page's times, or a thrown error. */
async function load(page, url, lib) {
  await page.goto(url);
  await page.waitForFunction(() => window.result !== undefined, null, { timeout: 20000 });
  const r = await page.evaluate(() => window.result);
  if (r.error) throw new Error(`start-up of ${lib}: ${r.error}`);
  return r;
}

/** `stormguard@before+call` -> { name: 'stormguard', pkg: 'before', flag: 'call' }. */
function parseLib(lib) {
  const [head, flag] = lib.split('+');
  const [name, pkg] = head.split('@');
  return { name, pkg, flag };
}

const run = promisify(execFile);

/** Node, cold: `loads` processes per build, the builds alternating; times as startup-node.mjs prints them. */
async function runNode({ builds, loads, origin, log }) {
  const samples = Object.fromEntries(builds.map((b) => [b.label, []]));
  log(`[startup] Node ${process.version}, cold: ${loads} processes per build, alternating`);
  for (let i = 0; i < loads; i++) {
    for (let j = 0; j < builds.length; j++) {
      const b = builds[(i + j) % builds.length];
      const { stdout } = await run(process.execPath, [join(benchDir, 'startup-node.mjs'), b.dir, origin], { cwd: root });
      samples[b.label].push(JSON.parse(stdout.trim().split('\n').pop()));
    }
  }
  const out = {};
  for (const b of builds) {
    const s = samples[b.label];
    out[b.label] = Object.fromEntries(['importMs', 'clientMs', 'readyMs', 'answerMs'].map((k) => [k, summarize(s.map((r) => r[k]))]));
  }
  return out;
}

/**
 * `extra`: the +call row and Node's (the quick run leaves them out unless `pkgs` are given, to keep
 * its time).
 */
export async function runStartup({ quick, libs, pkgs = [], extra = !quick || pkgs.length > 0, loads = quick ? 5 : 20, log = console.log } = {}) {
  libs ??= [
    ...STARTUP_LIBS.slice(0, 2),
    ...(extra ? ['stormguard+call'] : []),
    ...pkgs.flatMap((p) => [`stormguard@${p.label}`, `stormguard@${p.label}+call`]),
    ...STARTUP_LIBS.slice(2),
  ];
  await buildBundles(); // the bundles of the size section, from the pkg/ of now
  await bundlePkg('now');
  for (const p of pkgs) await bundlePkg(p.label, p.dir);
  const site = await startSite({ staticCacheControl: 'public, max-age=3600' });
  const browser = await launchChromium();
  const samples = Object.fromEntries(libs.map((l) => [l, { cold: [], warm: [] }]));
  let node;
  try {
    log(`[startup] ${loads} cold + warm page loads per library, alternating (the order rotating every round)`);
    for (let i = 0; i < loads; i++) {
      for (let j = 0; j < libs.length; j++) {
        const lib = libs[(i + j) % libs.length];
        const { name, pkg, flag } = parseLib(lib);
        const q = new URLSearchParams({ lib: name });
        if (pkg) q.set('pkg', pkg);
        if (flag) q.set(flag, '');
        const url = `${site.url}/bench/pages/startup.html?${q}`;
        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          samples[lib].cold.push(await load(page, url, lib));
          samples[lib].warm.push(await load(page, url, lib));
        } finally {
          await context.close();
        }
      }
    }
    if (extra) {
      const builds = [{ label: 'now', dir: join(root, 'pkg') }, ...pkgs];
      node = await runNode({ builds, loads, origin: site.url, log });
    }
  } finally {
    await browser.close();
    await site.close();
  }
  const result = { loads, libs: {}, node, nodeVersion: node ? process.version : undefined, pkgs: pkgs.length ? pkgs : undefined };
  const ms = (s) => (s ? `${s.median.toFixed(1)} ms` : '—');
  log('[startup]   library              import -> ready, median: cold    warm   (import alone: cold    warm)  stormguard, cold: client   answer');
  const opt = (rows, k) => (rows[0]?.[k] === undefined ? undefined : summarize(rows.map((r) => r[k])));
  for (const lib of libs) {
    const { cold, warm } = samples[lib];
    const l = {
      importMs: summarize(cold.map((r) => r.importMs)),
      readyMs: summarize(cold.map((r) => r.readyMs)),
      navToReadyMs: summarize(cold.map((r) => r.navToReadyMs)),
      warmImportMs: summarize(warm.map((r) => r.importMs)),
      warmReadyMs: summarize(warm.map((r) => r.readyMs)),
      warmNavToReadyMs: summarize(warm.map((r) => r.navToReadyMs)),
      clientMs: opt(cold, 'clientMs'),
      answerMs: opt(cold, 'answerMs'),
      callMs: opt(cold, 'callMs'),
      wasmStartMs: opt(cold, 'wasmStartMs'),
      wasmEndMs: opt(cold, 'wasmEndMs'),
    };
    result.libs[lib] = l;
    log(`[startup]   ${lib.padEnd(20)} ${ms(l.readyMs).padStart(30)} ${ms(l.warmReadyMs).padStart(9)}` +
      `  ${ms(l.importMs).padStart(20)} ${ms(l.warmImportMs).padStart(9)}` +
      (l.clientMs ? `  ${ms(l.clientMs).padStart(23)} ${ms(l.answerMs).padStart(8)}` : ''));
  }
  if (node) {
    log('[startup]   Node, cold, median       import     client      ready     answer');
    for (const [label, n] of Object.entries(node)) {
      log(`[startup]   ${label.padEnd(22)} ${[n.importMs, n.clientMs, n.readyMs, n.answerMs].map((s) => ms(s).padStart(10)).join(' ')}`);
    }
  }
  result.loadAverage = os.loadavg();
  for (const p of pkgs) log(sideBySide(result, p.label));
  return result;
}

/** The medians of this checkout's build over `label`'s (the same run), each as now / before. */
export function sideBySide(result, label) {
  const load = result.loadAverage ? `; load average ${result.loadAverage.map((x) => x.toFixed(1)).join(', ')} on ${os.cpus().length} cores` : '';
  const lines = [`[startup] now / ${label}, medians of the same run (below 1: now is faster${load})`];
  const row = (what, a, b) => {
    if (!a || !b) return;
    lines.push(`[startup]   ${what.padEnd(44)} ${a.median.toFixed(1).padStart(8)} / ${b.median.toFixed(1).padStart(8)} ms = x${(a.median / b.median).toFixed(2)}`);
  };
  const L = result.libs;
  const now = L.stormguard;
  const then = L[`stormguard@${label}`];
  row('Chromium import()', now?.importMs, then?.importMs);
  row('Chromium import -> client (first call possible)', now?.clientMs, then?.clientMs);
  row('Chromium import -> wasm download starts', now?.wasmStartMs, then?.wasmStartMs);
  row('Chromium import -> wasm downloaded', now?.wasmEndMs, then?.wasmEndMs);
  row('Chromium import -> engine ready', now?.readyMs, then?.readyMs);
  row('Chromium warm import -> engine ready', now?.warmReadyMs, then?.warmReadyMs);
  row('Chromium import -> answer of a call made at once', L['stormguard+call']?.answerMs, L[`stormguard@${label}+call`]?.answerMs);
  row('Chromium, that call made: engine ready', L['stormguard+call']?.readyMs, L[`stormguard@${label}+call`]?.readyMs);
  row('Chromium, that call made: wasm downloaded', L['stormguard+call']?.wasmEndMs, L[`stormguard@${label}+call`]?.wasmEndMs);
  row('Chromium, that call: request() until it returns', L['stormguard+call']?.callMs, L[`stormguard@${label}+call`]?.callMs);
  const N = result.node ?? {};
  row('Node import()', N.now?.importMs, N[label]?.importMs);
  row('Node import -> client', N.now?.clientMs, N[label]?.clientMs);
  row('Node import -> engine ready', N.now?.readyMs, N[label]?.readyMs);
  row('Node import -> answer of a call made at once', N.now?.answerMs, N[label]?.answerMs);
  return lines.join('\n');
}

// While developing: `node bench/startup.mjs [--pkg=before=/tmp/pkg-before] [--loads=20]
// [--libs=stormguard,stormguard+call,stormguard@before,stormguard@before+call,ky]` prints the rows
// (and Node's, and the side-by-side ratios) and writes nothing.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const arg = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  await runStartup({
    pkgs: pkgsFromArgs(args),
    loads: arg('loads') ? Number(arg('loads')) : undefined,
    libs: arg('libs')?.split(','),
  });
}
