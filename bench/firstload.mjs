// First load (issue 39): the same app (bench/apps/firstload: Vite + React 19 +
// TanStack Query v5 + zod; each load a login POST and 2 GETs against an API on
// loopback) built four ways from the packed tarball (`npm pack ./pkg`): plain
// fetch, ky, axios + axios-retry and stormguard (the README's TanStack Query
// recipe: createClientSync(), nothing awaited before the first render), and
// stormguard again with the README's Vite plugin that preloads the wasm.
// Production builds (`vite build`), served gzip-compressed (zlib level 6) by a
// server of this process, loaded in headless Chromium with the cache disabled
// (a fresh context per load and Network.setCacheDisabled).
//
// First data: the moment the app has rendered both GETs' data (its
// performance.mark('first-data'), ms from navigation start). Conditions:
// unthrottled; CDP network emulation of 1.6 Mbps down / 750 kbps up / 150 ms
// RTT; the same with the CPU 4x slower (Emulation.setCPUThrottlingRate).
// Builds alternate within each round, so the machine's noise hits them alike.
//
// Bytes per build: critical path = the JS + wasm (gzip, as transferred) whose
// download ended before the page's first API request left (Resource Timing);
// shipped = every JS and wasm file of the build, gzip.
//
// The app's npm packages come from its committed package-lock.json (`npm ci
// --prefer-offline`, again only when the lock file changes), then the tarball
// (`npm install --no-save`), as tests/apps are installed (tests/e2e/apps.mjs).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { extname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { launchChromium } from './browser.mjs';
import { benchDir, buildDir, fixed, kb, summarize } from './lib.mjs';

const run = promisify(execFile);
export const appDir = join(benchDir, 'apps/firstload');
export const FIRSTLOAD_BUILDS = ['fetch', 'ky', 'axios', 'stormguard', 'stormguard-preload'];
export const BUILD_LABELS = {
  fetch: 'plain fetch',
  ky: 'ky',
  axios: 'axios + axios-retry',
  stormguard: 'stormguard',
  'stormguard-preload': "stormguard + the README's preload plugin",
};
export const CONDITIONS = {
  unthrottled: { label: 'unthrottled', network: null, cpu: 1 },
  slow: { label: '1.6 Mbps / 750 kbps / 150 ms RTT', network: { latency: 150, down: 1.6e6, up: 750e3 }, cpu: 1 },
  'slow-cpu': { label: 'same + 4x slower CPU', network: { latency: 150, down: 1.6e6, up: 750e3 }, cpu: 4 },
};

// npm's own configuration of an enclosing `npm run bench` must not leak into the app's install.
const KEEP = /^npm_config_(cache|userconfig|globalconfig|registry|cafile|proxy|https_proxy|noproxy|strict_ssl)$/i;
const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || KEEP.test(k)));
childEnv.npm_config_update_notifier = 'false';
delete childEnv.FORCE_COLOR;
childEnv.NO_COLOR = '1';

async function sh(cmd, args, cwd, env = {}) {
  try {
    return await run(cmd, args, { cwd, maxBuffer: 64 << 20, env: { ...childEnv, ...env } });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`);
  }
}

const quiet = ['--no-audit', '--no-fund', '--loglevel=error'];

/** Installs the app (its lock file, then the packed pkg/) and builds `builds`; returns the dist folder. */
export async function buildApps(builds, log) {
  if (builds.includes('stormguard-preload')) {
    // the README's plugin as written: the app's copy must be the README's text
    const fn = /function preloadStormguardWasm\(\) \{\n[\s\S]*?\n\}\n/;
    const ours = readFileSync(join(appDir, 'vite.config.js'), 'utf8').match(fn)?.[0];
    if (!ours || ours !== readFileSync(join(benchDir, '../README.md'), 'utf8').match(fn)?.[0]) {
      throw new Error('bench/apps/firstload/vite.config.js: preloadStormguardWasm() is not the README\'s ("Preloading the wasm"): copy it from there');
    }
  }
  if (builds.includes('stormguard') || builds.includes('stormguard-preload')) {
    // the client as the README's TanStack Query recipe makes it (its api.ts), line for line
    const line = (text) => text.split('\n').find((l) => l.startsWith('export const api = createClientSync('));
    const ours = line(readFileSync(join(appDir, 'src/http/stormguard.ts'), 'utf8'));
    const recipe = /```ts\n\/\/ api\.ts\n[\s\S]*?```/.exec(readFileSync(join(benchDir, '../README.md'), 'utf8'))?.[0] ?? '';
    if (!ours || ours !== line(recipe)) {
      throw new Error('bench/apps/firstload/src/http/stormguard.ts: its createClientSync line is not the TanStack Query recipe\'s: copy it from the README');
    }
  }
  const lockSum = createHash('sha256').update(readFileSync(join(appDir, 'package-lock.json'))).digest('hex');
  const marker = join(appDir, 'node_modules/.firstload-lock');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== lockSum) {
    log('[firstload] npm ci (bench/apps/firstload, from its package-lock.json)');
    await sh('npm', ['ci', '--prefer-offline', ...quiet], appDir);
    writeFileSync(marker, lockSum);
  }
  const packDir = join(buildDir, 'firstload-pack');
  rmSync(packDir, { recursive: true, force: true });
  mkdirSync(packDir, { recursive: true });
  await sh('npm', ['pack', './pkg', '--pack-destination', packDir, '--silent'], join(benchDir, '..'));
  const tarball = join(packDir, readdirSync(packDir).find((f) => f.endsWith('.tgz')));
  await sh('npm', ['install', '--no-save', '--prefer-offline', ...quiet, tarball], appDir);
  for (const b of builds) {
    const t = performance.now();
    await sh(process.execPath, [join(appDir, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], appDir, { FIRSTLOAD_BUILD: b });
    log(`[firstload] vite build ${b}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  return join(appDir, 'dist');
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };
const ITEMS = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, title: `Item ${i + 1}`, price: 9.5 + i }));

/**
 * The builds' files (gzip-compressed once, served with Content-Encoding: gzip) under /<build>/, and the
 * API: POST /api/login -> { token }; GET /api/me and /api/items with that bearer token (401 without).
 * Each build's pages call /api/... of the same origin. Returns { url, files, close }.
 */
export async function startFirstloadServer(dist, builds) {
  const files = new Map(); // url path -> { type, raw, gz }
  for (const b of builds) {
    const walk = (dir, rel) => {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isDirectory()) walk(p, `${rel}/${f}`);
        else {
          const raw = readFileSync(p);
          files.set(`${rel}/${f}`, { build: b, type: TYPES[extname(f)] ?? 'application/octet-stream', raw, gz: gzipSync(raw, { level: 6 }) });
        }
      }
    };
    walk(join(dist, b), `/${b}`);
  }
  const token = 't0k3n';
  const json = (res, status, body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const server = createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path.startsWith('/api/')) {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        if (path === '/api/login' && req.method === 'POST') {
          const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
          return body.user === 'demo' ? json(res, 200, { token }) : json(res, 401, { error: 'bad login' });
        }
        if (req.headers.authorization !== `Bearer ${token}`) return json(res, 401, { error: 'no session' });
        if (path === '/api/me') return json(res, 200, { id: 'u1', name: 'Demo User' });
        if (path === '/api/items') return json(res, 200, { items: ITEMS });
        return json(res, 404, { error: 'not found' });
      });
      return;
    }
    const f = files.get(path.endsWith('/') ? `${path}index.html` : path);
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': f.type, 'content-encoding': 'gzip', 'content-length': f.gz.length, 'cache-control': 'no-store' });
    res.end(f.gz);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    files,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

/** Gzip bytes of every JS and wasm file of `build` (what it ships), and the parts. */
function shipped(files, build) {
  let js = 0;
  let wasm = 0;
  for (const [path, f] of files) {
    if (f.build !== build) continue;
    if (path.endsWith('.js')) js += f.gz.length;
    else if (path.endsWith('.wasm')) wasm += f.gz.length;
  }
  return { js, wasm, total: js + wasm };
}

/** What the page reports once its first data is rendered (times in ms from navigation start). */
function pageTimes() {
  const entries = performance.getEntriesByType('resource');
  const path = (e) => new URL(e.name).pathname;
  const apiEntries = entries.filter((e) => path(e).startsWith('/api/'));
  const firstRequest = Math.min(...apiEntries.map((e) => e.startTime));
  const code = entries.filter((e) => /\.(js|wasm)$/.test(path(e)));
  const critical = code.filter((e) => e.responseEnd <= firstRequest);
  const mark = (name) => performance.getEntriesByName(name, 'mark')[0]?.startTime ?? null;
  const nav = performance.getEntriesByType('navigation')[0];
  const login = apiEntries.find((e) => path(e) === '/api/login');
  const js = code.filter((e) => path(e).endsWith('.js'));
  // one or more wasm files (a boot module and the engine, say): the breakdown spans all of them
  const wasm = code.filter((e) => path(e).endsWith('.wasm'));
  const wasmPaths = wasm.map(path);
  return {
    firstData: window.firstData,
    criticalBytes: critical.reduce((s, e) => s + e.encodedBodySize, 0),
    criticalJs: critical.filter((e) => path(e).endsWith('.js')).reduce((s, e) => s + e.encodedBodySize, 0),
    criticalWasm: critical.filter((e) => path(e).endsWith('.wasm')).reduce((s, e) => s + e.encodedBodySize, 0),
    // the breakdown: where the time before the first request goes
    htmlEnd: nav.responseEnd,
    jsStart: js.length ? Math.min(...js.map((e) => e.startTime)) : null,
    jsEnd: js.length ? Math.max(...js.map((e) => e.responseEnd)) : null,
    appStart: mark('app-start'),
    wasmStart: wasm.length ? Math.min(...wasm.map((e) => e.startTime)) : null,
    wasmEnd: wasm.length ? Math.max(...wasm.map((e) => e.responseEnd)) : null,
    engineReady: mark('engine-ready'),
    firstRequest,
    loginEnd: login ? login.responseEnd : null,
    apiEnd: Math.max(...apiEntries.map((e) => e.responseEnd)),
    requests: apiEntries.length,
    // the most times one wasm file was downloaded (a preload that does not match the package's request: 2)
    wasmFetches: Math.max(0, ...wasmPaths.map((p) => wasmPaths.filter((q) => q === p).length)),
  };
}

const TRACE_CATEGORIES = ['devtools.timeline', 'v8', 'v8.wasm', 'disabled-by-default-v8.compile', 'blink.user_timing', 'v8.execute'];

/**
 * What a Chromium trace of one load says of the renderer's main thread, per window (ms from navigation
 * start, aligned on the 'first-data' mark): wasm functions compiled lazily (V8 compiles each on its first
 * call), wasm instantiation, JS compilation.
 */
export function traceSummary(buf, t) {
  const raw = JSON.parse(buf.toString());
  const ev = raw.traceEvents ?? raw;
  const mark = ev.find((e) => e.name === 'first-data' && e.cat?.includes('blink.user_timing'));
  if (!mark) return null;
  const main = `${mark.pid}:${mark.tid}`;
  const t0 = mark.ts - t.firstData * 1000;
  const windows = { beforeFirstRequest: [t.wasmEnd ?? t.jsEnd, t.firstRequest], toFirstData: [0, t.firstData] };
  const out = {};
  for (const [name, [from, to]] of Object.entries(windows)) {
    const w = { from, to, wasmLazyCompiles: 0, wasmLazyCompileMs: 0, wasmInstantiateMs: 0, jsCompileMs: 0 };
    for (const e of ev) {
      if (e.ph !== 'X' || e.dur === undefined || `${e.pid}:${e.tid}` !== main) continue;
      const start = (e.ts - t0) / 1000;
      if (start < from || start > to) continue;
      const ms = e.dur / 1000;
      if (e.name === 'wasm.CompileLazy') {
        w.wasmLazyCompiles++;
        w.wasmLazyCompileMs += ms;
      } else if (e.name === 'wasm.AsyncInstantiate') w.wasmInstantiateMs += ms;
      else if (e.name === 'V8.CompileCode') w.jsCompileMs += ms;
    }
    out[name] = w;
  }
  return out;
}

/** One cold load of `url` under `cond`: the page's times (`trace`: and a summary of a Chromium trace). */
export async function loadOnce(browser, url, cond, { trace = false } = {}) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    if (cond.network) {
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false,
        latency: cond.network.latency,
        downloadThroughput: cond.network.down / 8,
        uploadThroughput: cond.network.up / 8,
      });
    }
    if (cond.cpu !== 1) await cdp.send('Emulation.setCPUThrottlingRate', { rate: cond.cpu });
    if (trace) await browser.startTracing(page, { categories: TRACE_CATEGORIES });
    await page.goto(url, { waitUntil: 'commit' });
    await page.waitForFunction(() => window.firstData !== undefined || window.firstDataError !== undefined, null, { timeout: 60000 })
      .catch((e) => { throw new Error(`${url}: no first data (${errors.join('; ') || e.message})`); });
    const err = await page.evaluate(() => window.firstDataError);
    if (err) throw new Error(`${url}: ${err}`);
    const t = await page.evaluate(pageTimes);
    if (trace) t.trace = traceSummary(await browser.stopTracing(), t);
    // for the breakdown: what compiling the wasm alone costs on this CPU (after the load; not streamed)
    t.compileMs = await page.evaluate(async () => {
      const es = performance.getEntriesByType('resource').filter((x) => new URL(x.name).pathname.endsWith('.wasm'));
      if (!es.length) return null;
      let ms = 0;
      for (const e of es) {
        const bytes = await (await fetch(e.name)).arrayBuffer();
        const t0 = performance.now();
        await WebAssembly.compile(bytes);
        ms += performance.now() - t0;
      }
      return ms;
    });
    if (t.requests !== 3) throw new Error(`${url}: ${t.requests} API requests, expected 3 (a login and 2 GETs)`);
    if (t.wasmFetches > 1) throw new Error(`${url}: a wasm file was downloaded ${t.wasmFetches} times`);
    return t;
  } finally {
    await context.close();
  }
}

const BREAKDOWN = ['htmlEnd', 'jsStart', 'jsEnd', 'appStart', 'wasmStart', 'wasmEnd', 'engineReady', 'firstRequest', 'loginEnd', 'apiEnd', 'firstData', 'compileMs'];

/**
 * The benchmark: `builds` x `conditions`, `loads` cold loads each (medians). Quick (CI): stormguard and ky,
 * the slow network only, 3 loads.
 */
export async function runFirstload({ quick, builds, conditions, loads, log = console.log } = {}) {
  builds ??= quick ? ['stormguard', 'ky'] : FIRSTLOAD_BUILDS;
  conditions ??= quick ? ['slow'] : Object.keys(CONDITIONS);
  loads ??= quick ? 3 : 5;
  const dist = await buildApps(builds, log);
  const server = await startFirstloadServer(dist, builds);
  const browser = await launchChromium();
  const samples = {};
  try {
    // one load per build first, not counted: the browser's own first-navigation costs are paid before any sample
    for (const b of builds) await loadOnce(browser, `${server.url}/${b}/`, CONDITIONS.unthrottled);
    for (const c of conditions) {
      log(`[firstload] ${CONDITIONS[c].label}: ${loads} cold loads per build, alternating`);
      for (let i = 0; i < loads; i++) {
        for (const b of builds) {
          (samples[b] ??= {})[c] ??= [];
          samples[b][c].push(await loadOnce(browser, `${server.url}/${b}/`, CONDITIONS[c]));
        }
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  const result = { loads, conditions: Object.fromEntries(conditions.map((c) => [c, CONDITIONS[c]])), builds: {} };
  for (const b of builds) {
    const r = { label: BUILD_LABELS[b], shipped: shipped(server.files, b), conditions: {} };
    for (const c of conditions) {
      const s = samples[b][c];
      const med = (k) => (s.some((x) => x[k] === null) ? null : summarize(s.map((x) => x[k])).median);
      r.conditions[c] = {
        firstDataMs: summarize(s.map((x) => x.firstData)),
        criticalBytes: med('criticalBytes'),
        criticalJs: med('criticalJs'),
        criticalWasm: med('criticalWasm'),
        breakdown: Object.fromEntries(BREAKDOWN.map((k) => [k, med(k)])),
      };
    }
    result.builds[b] = r;
  }
  for (const line of firstloadTable(result)) log(`[firstload] ${line}`);
  for (const line of breakdownTable(result)) log(`[firstload] ${line}`);
  return result;
}

const ms = (v) => (v === null || v === undefined ? '—' : `${Math.round(v)} ms`);

/** The table as text lines: per build, bytes and the median first data per condition (+x % over ky). */
export function firstloadTable(r, { md = false } = {}) {
  const conds = Object.keys(r.conditions);
  const head = ['build', 'critical path (gzip)', 'shipped (gzip)', ...conds.map((c) => `first data, ${r.conditions[c].label}`)];
  const rows = Object.entries(r.builds).map(([b, x]) => {
    const crit = x.conditions[conds[0]];
    return [
      x.label,
      `${kb(crit.criticalBytes)} (JS ${kb(crit.criticalJs)}, wasm ${kb(crit.criticalWasm)})`,
      `${kb(x.shipped.total)} (JS ${kb(x.shipped.js)}, wasm ${kb(x.shipped.wasm)})`,
      ...conds.map((c) => {
        const v = x.conditions[c].firstDataMs.median;
        const ky = r.builds.ky?.conditions[c]?.firstDataMs.median;
        return b !== 'ky' && ky ? `${ms(v)} (${v >= ky ? '+' : ''}${fixed((100 * (v - ky)) / ky, 1)} % vs ky)` : ms(v);
      }),
    ];
  });
  if (md) return ['| ' + head.join(' | ') + ' |', '|' + head.map(() => '---').join('|') + '|', ...rows.map((row) => '| ' + row.join(' | ') + ' |')];
  const w = head.map((_, i) => Math.max(...[head, ...rows].map((row) => String(row[i]).length)));
  return [head, ...rows].map((row) => row.map((c, i) => String(c).padEnd(w[i])).join('  '));
}

/** Where the time goes before the first data: medians of each moment, ms from navigation start. */
export function breakdownTable(r) {
  const lines = [
    'medians, ms from navigation start: html end | js start | js end | app start | wasm start | wasm end | engine ready | 1st request | login end | api end | first data',
    '  (wasm start/end: the first start and last end of every wasm file; then: WebAssembly.compile of the wasm alone after the load, ms)',
  ];
  for (const [b, x] of Object.entries(r.builds)) {
    for (const [c, y] of Object.entries(x.conditions)) {
      lines.push(`${b.padEnd(18)} ${c.padEnd(11)} ${BREAKDOWN.map((k) => (y.breakdown[k] === null ? '—' : Math.round(y.breakdown[k]))).join(' | ')}`);
    }
  }
  return lines;
}

/** RESULTS.md's section. */
export function firstloadSection(res) {
  const r = res.firstload;
  if (!r) return '';
  return [
    '## First load (issue 39)',
    '',
    'The same app (Vite + React 19 + TanStack Query v5 + zod; a login POST and 2 GETs against a loopback API) built ' +
      'from the packed tarball with each client, production builds served gzip, headless Chromium, cache disabled. ' +
      `First data: the app's rendered data of both GETs, ms from navigation start, median of ${r.loads} cold loads. ` +
      'Critical path: the JS + wasm (gzip) downloaded before the first API request left; shipped: every JS and wasm file.',
    '',
    ...firstloadTable(r, { md: true }),
    '',
    '```',
    ...breakdownTable(r),
    '```',
  ].join('\n');
}

// While developing: node bench/firstload.mjs [--builds=ky,stormguard] [--conditions=slow,slow-cpu] [--loads=3]
// prints the tables and writes nothing (pkg/ as it is: build it first). --trace: instead, one traced load
// per build and condition (the builds as they are in dist/), and what V8 compiled on the main thread.
if (import.meta.url === `file://${process.argv[1]}` && process.argv.includes('--trace')) {
  const arg = (name) => process.argv.slice(2).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3).split(',');
  const builds = arg('builds') ?? ['stormguard'];
  const conditions = arg('conditions') ?? Object.keys(CONDITIONS);
  const server = await startFirstloadServer(join(appDir, 'dist'), builds);
  const browser = await launchChromium();
  try {
    for (const b of builds) {
      for (const c of conditions) {
        const t = await loadOnce(browser, `${server.url}/${b}/`, CONDITIONS[c], { trace: true });
        for (const [w, x] of Object.entries(t.trace ?? {})) {
          console.log(`[firstload] ${b} ${c} ${w} (${Math.round(x.from)}-${Math.round(x.to)} ms): ${x.wasmLazyCompiles} wasm functions ` +
            `compiled lazily, ${fixed(x.wasmLazyCompileMs, 1)} ms; instantiate ${fixed(x.wasmInstantiateMs, 1)} ms; JS compile ${fixed(x.jsCompileMs, 1)} ms`);
        }
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name) => process.argv.slice(2).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const list = (name, known) => {
    const v = arg(name)?.split(',').filter(Boolean);
    for (const x of v ?? []) if (!known.includes(x)) throw new Error(`unknown ${name} ${x}; known: ${known.join(', ')}`);
    return v;
  };
  await runFirstload({
    builds: list('builds', FIRSTLOAD_BUILDS),
    conditions: list('conditions', Object.keys(CONDITIONS)),
    loads: arg('loads') ? Number(arg('loads')) : undefined,
  });
}
