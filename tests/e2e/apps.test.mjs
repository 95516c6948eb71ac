// Real apps: tests/apps/react (Vite + React) and tests/apps/vue (Vite + Vue)
// install the packed package (`npm pack ./pkg`) as a user would, are built
// with `vite build`, served as static files, and driven in Chromium against
// the fault server:
//   1. the first load renders the layout from the network;
//   2. with the server failing, a reload renders the cached layout with an
//      "offline template" banner;
//   3. with storage cleared and the server failing, the fallback (React) or
//      the skeleton (Vue) renders;
//   4. the console shows no uncaught error;
// and the hook aborts its call when the URL changes and on unmount (the fault
// server sees the connection closed long before the client's own timeout).
//
// Each app is copied to a temporary folder, installed from its committed
// package-lock.json (`npm ci --prefer-offline`: the npm cache when it has the
// packages, the registry otherwise) plus `npm install --no-save <tarball>`.
// Screenshots of every state go to test-output/apps/.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium, root } from './browser.mjs';
import { startServer } from '../server/server.mjs';
import { childEnv, faultLog, installApp as install, packTarball, readmeBlock, run, sh, viteBuild, watchPage } from './apps.mjs';

const shots = join(root, 'test-output/apps');

/** The server's layout: what the apps must render from the network and then from the cache. */
const LAYOUT = {
  title: 'Fleet dashboard (server layout v7)',
  blocks: [
    { type: 'text', text: 'Layout served by the API.' },
    { type: 'card', title: 'Vehicles', text: '42 on the road' },
    { type: 'button', label: 'Dispatch' },
  ],
};
const OTHER = { title: 'Second source layout', blocks: [{ type: 'text', text: 'From the alternative URL.' }] };

let work, tarball, fault, browser;
let log, arrived, closedByClient; // the fault server's log (./apps.mjs)

before(async () => {
  assert.ok(existsSync(join(root, 'pkg/package.json')), 'pkg/ is missing: run `node scripts/build.mjs` first');
  mkdirSync(shots, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'stormguard-apps-'));
  tarball = await packTarball(work);
  fault = await startServer();
  ({ log, arrived, closedByClient } = faultLog(fault.url));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await fault?.close();
  if (work && !process.env.STORMGUARD_KEEP_APPS) rmSync(work, { recursive: true, force: true });
});

const installApp = (name) => install(name, work, tarball);
/** Installs and builds one Vite app; returns the dist folder. */
const buildApp = async (name) => viteBuild(await installApp(name));

const RUN = Date.now().toString(36);

/**
 * Starts `node args` and resolves once its output contains `ready`: `{ log(), stop() }`
 * (stop kills it and waits for its exit).
 */
async function startProcess(args, { cwd, env, ready, timeoutMs = 30_000 }) {
  const child = spawn(process.execPath, args, { cwd, env });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const stop = () => new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    child.once('exit', r);
    child.kill();
  });
  const end = Date.now() + timeoutMs;
  // Escape sequences are stripped before matching, in case a tool colours its output anyway.
  // eslint-disable-next-line no-control-regex
  const plain = () => out.replace(/\x1b\[[0-9;]*m/g, '');
  while (!plain().includes(ready)) {
    if (Date.now() > end || child.exitCode !== null) {
      await stop();
      throw new Error(`${args.join(' ')} did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { log: () => out, stop };
}

/** A loopback port free right now, for a dev or production server the test starts. */
const freePort = () => new Promise((resolve) => {
  const srv = createServer().listen(0, '127.0.0.1', () => {
    const { port } = srv.address();
    srv.close(() => resolve(port));
  });
});

for (const app of ['react', 'vue']) {
  describe(`${app} app (Vite build of the packed package)`, () => {
    let site, dist, context, page, errors;
    const layoutUrl = (id, doc = LAYOUT) => `${fault.url}/json?id=${id}&body=${encodeURIComponent(JSON.stringify(doc))}`;
    const failUrl = (id) => `${fault.url}/status/503?id=${id}`;
    const hangUrl = (id) => `${fault.url}/hang?id=${id}`;
    const open = (params) => page.goto(`${site.url}/?${new URLSearchParams(params)}`);
    const state = (s) => page.waitForSelector(`[data-testid="view"][data-state="${s}"]`, { timeout: 10_000 });
    const shot = (n) => page.screenshot({ path: join(shots, `${app}-${n}.png`), fullPage: true });

    before(async () => {
      dist = await buildApp(app);
      site = await startServer({ staticRoot: dist });
      context = await browser.newContext({ viewport: { width: 800, height: 600 } });
      page = await context.newPage();
      errors = watchPage(page);
    });
    after(async () => {
      await context?.close();
      await site?.close();
    });

    test('1. first load renders the layout from the network', async () => {
      await open({ layout: layoutUrl(`${app}-good`) });
      await state('network');
      assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title);
      assert.equal(await page.$('[data-testid="banner"]'), null, 'no offline banner');
      assert.match(await page.textContent('[data-testid="layout"]'), /42 on the road/);
      const saved = await page.evaluate(() => JSON.parse(localStorage.getItem('stormguard:layout')));
      assert.deepEqual(saved.data, LAYOUT, 'the last good copy is in LocalStorage under prefix + cacheKey');
      assert.equal(saved.v, 1);
      await shot('1-network');
    });

    test('2. server failing: a reload renders the cached layout with an offline banner', async () => {
      await open({ layout: failUrl(`${app}-fail`) });
      await state('cache');
      assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title);
      assert.match(await page.textContent('[data-testid="banner"]'), /Offline template/);
      assert.match(await page.textContent('[data-testid="banner"]'), /HttpError/);
      assert.equal((await log(`${app}-fail`)).length, 2, 'two attempts (maxAttempts: 2), then the cache');
      await shot('2-cache');
      // refresh() (the banner's Retry) calls again; still failing, the cache stays. Its first attempt is
      // the third failure in a row, which opens the breaker (consecutiveFailures: 3 by default), so its
      // retry is not sent.
      await page.click('[data-testid="retry"]');
      const end = Date.now() + 5000;
      while ((await log(`${app}-fail`)).length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
      await state('cache');
      await new Promise((r) => setTimeout(r, 500)); // beyond the 50 ms backoff: a retry would have been sent
      assert.equal((await log(`${app}-fail`)).length, 3, 'Retry made a new call; the open breaker kept its retry back');
      assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title);
    });

    test('3. storage cleared, server failing: the fallback or the skeleton renders', async () => {
      await page.evaluate(() => localStorage.clear());
      await page.reload();
      if (app === 'react') {
        await state('fallback');
        assert.equal(await page.textContent('[data-testid="title"]'), 'Dashboard');
        assert.match(await page.textContent('[data-testid="banner"]'), /Offline template.*no saved layout/);
      } else {
        await state('none');
        assert.ok(await page.isVisible('[data-testid="skeleton"]'), 'the skeleton stays');
        assert.match(await page.textContent('[data-testid="unavailable"]'), /Layout unavailable/);
        assert.equal(await page.$('[data-testid="layout"]'), null);
      }
      await shot('3-no-cache');
      // Retry once the server is back: the network copy replaces it.
      await open({ layout: layoutUrl(`${app}-back`) });
      await state('network');
      assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title);
    });

    test('a URL change aborts the call in flight', async () => {
      const id = `${app}-switch`;
      await open({ layout: hangUrl(id), alt: layoutUrl(`${app}-alt`, OTHER) });
      await state('loading');
      assert.ok(await page.isVisible('[data-testid="skeleton"]'));
      await shot('4-loading');
      await arrived(id);
      await page.click('[data-testid="switch"]');
      await state('network');
      assert.equal(await page.textContent('[data-testid="title"]'), OTHER.title);
      const [entry] = await closedByClient(id);
      assert.ok(entry.closedAt - entry.t < 2500, `closed by the URL change, not the 3 s timeout (${entry.closedAt - entry.t} ms)`);
      assert.equal(entry.serverClosed, false);
    });

    test('unmounting aborts the call in flight', async () => {
      const id = `${app}-unmount`;
      await open({ layout: hangUrl(id) });
      await state('loading');
      await arrived(id);
      await page.click('[data-testid="toggle"]');
      await page.waitForSelector('[data-testid="hidden"]');
      const [entry] = await closedByClient(id);
      assert.ok(entry.closedAt - entry.t < 2500, `closed by the unmount, not the 3 s timeout (${entry.closedAt - entry.t} ms)`);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await log(id)).length, 1, 'an aborted call is not retried');
    });

    if (app === 'vue') {
      test("the README's Vue recipe as written (src/LayoutPage.vue): the layout, then the cached copy with its banner, whose Retry calls again", async () => {
        const shipped = readFileSync(join(root, 'pkg/README.md'), 'utf8');
        const recipe = readFileSync(join(root, 'tests/apps/vue/src/LayoutPage.vue'), 'utf8');
        assert.equal(recipe, readmeBlock(shipped, 'LayoutPage.vue'), "src/LayoutPage.vue is the README's");
        const id = `vue-recipe-${RUN}`;
        await open({ recipe: layoutUrl(id) });
        await page.evaluate(() => localStorage.clear());
        await page.reload();
        await page.waitForSelector('[data-testid="recipe-title"]', { timeout: 10_000 });
        assert.equal(await page.textContent('[data-testid="recipe-title"]'), LAYOUT.title);
        assert.equal(await page.$('[data-testid="recipe-banner"]'), null, 'no banner for a network copy');
        // The server fails (503 twice: maxAttempts 2): the copy saved under cacheKey 'layout', with the banner.
        const failing = `${fault.url}/fail-first?n=100&status=503&key=${id}&id=${id}-fail`;
        await open({ recipe: failing });
        await page.waitForSelector('[data-testid="recipe-banner"]', { timeout: 10_000 });
        assert.equal(await page.textContent('[data-testid="recipe-title"]'), LAYOUT.title);
        assert.equal((await log(`${id}-fail`)).length, 2);
        await page.click('[data-testid="recipe-retry"]');
        const end = Date.now() + 5000;
        while ((await log(`${id}-fail`)).length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
        assert.equal((await log(`${id}-fail`)).length, 3, 'Retry (refresh()) called again');
        assert.ok(await page.isVisible('[data-testid="recipe-banner"]'));
        assert.deepEqual(errors.filter((e) => !/status of 503/.test(e)), []);
      });
    }

    if (app === 'react') {
      test('refresh() while a transition to another URL is pending reloads the URL on screen, and keeps its document', async () => {
        const [a, b] = [`react-tx-a-${RUN}`, `react-tx-b-${RUN}`];
        await open({ layout: layoutUrl(a), alt: layoutUrl(b, OTHER), transition: '' });
        await state('network');
        assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title);
        // The switch renders with the other URL, but a sibling holds that render uncommitted.
        await page.click('[data-testid="switch"]');
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title, 'the transition is pending');
        await page.click('[data-testid="reload"]');
        const end = Date.now() + 5000;
        while ((await log(a)).length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal((await log(a)).length, 2, 'Reload called the URL on screen again');
        assert.equal((await log(b)).length, 0, 'not the one a render not yet committed asked for');
        await state('network');
        assert.equal(await page.textContent('[data-testid="title"]'), LAYOUT.title, 'its document stays on screen');
        // Once the transition commits, the other URL loads, once.
        await page.click('[data-testid="release"]');
        await page.waitForFunction((t) => document.querySelector('[data-testid="title"]')?.textContent === t, OTHER.title, { timeout: 10_000 });
        assert.equal((await log(b)).length, 1);
        assert.deepEqual(errors, []);
      });

      test('the built index.html preloads the wasm (README\'s Vite plugin): the page asks for it once', async () => {
        const fn = /function preloadStormguardWasm\(\) \{\n[\s\S]*?\n\}\n/;
        const config = readFileSync(join(root, 'tests/apps/react/vite.config.js'), 'utf8').match(fn)?.[0];
        assert.ok(config, 'the app uses the plugin');
        assert.equal(readFileSync(join(root, 'README.md'), 'utf8').match(fn)?.[0], config, 'README shows the plugin the app uses');
        const wasmFile = readdirSync(join(dist, 'assets')).find((f) => f.endsWith('.wasm'));
        const html = readFileSync(join(dist, 'index.html'), 'utf8');
        assert.ok(html.includes(`<link rel="preload" href="/assets/${wasmFile}" as="fetch" type="application/wasm" crossorigin>`), html);
        const wasmRequests = async () =>
          (await (await fetch(`${site.url}/_log?id=default`)).json()).filter((e) => e.path === `/assets/${wasmFile}`).length;
        const before = await wasmRequests();
        const fresh = await browser.newContext();
        try {
          const p = await fresh.newPage();
          const errs = watchPage(p);
          await p.goto(`${site.url}/?${new URLSearchParams({ layout: layoutUrl('react-preload') })}`);
          await p.waitForSelector('[data-testid="view"][data-state="network"]', { timeout: 10_000 });
          await new Promise((r) => setTimeout(r, 200));
          assert.deepEqual(errs, []);
        } finally {
          await fresh.close();
        }
        assert.equal(await wasmRequests() - before, 1);
      });

      test('a client that fails to load (index.html instead of the wasm) still serves the fallback', async () => {
        // What the Vite 7 dev server does without optimizeDeps.exclude: the wasm
        // URL is answered with index.html. useSchema serves `fallback` with the error.
        const page2 = await context.newPage();
        const errors2 = watchPage(page2);
        await page2.goto(`${site.url}/?${new URLSearchParams({ layout: layoutUrl('react-noload'), wasm: '/index.html' })}`);
        await page2.waitForSelector('[data-testid="view"][data-state="fallback"]', { timeout: 10_000 });
        assert.equal(await page2.textContent('[data-testid="title"]'), 'Dashboard');
        assert.match(await page2.textContent('[data-testid="banner"]'), /OptionsError/);
        const why = await page2.getAttribute('[data-testid="reason"]', 'title');
        assert.match(why, new RegExp(`${site.url}/index\\.html is not a WebAssembly module`));
        assert.match(why, /content-type text\/html/);
        assert.equal((await log('react-noload')).length, 0, 'nothing was sent without a client');
        await page2.screenshot({ path: join(shots, 'react-5-client-failed.png'), fullPage: true });
        await page2.close();
        assert.deepEqual(errors2, []);
      });

      test('the Vite 7 dev server without optimizeDeps.exclude: the fallback, and an error naming the URL and the fix', async () => {
        const dir = join(work, app);
        const port = await freePort();
        const vite = await startProcess([join(dir, 'node_modules/vite/bin/vite.js'), '--config', 'vite.dev-no-exclude.config.js',
          '--port', String(port), '--strictPort', '--host', '127.0.0.1'], { cwd: dir, env: childEnv, ready: `127.0.0.1:${port}` });
        try {
          const dev = await context.newPage();
          await dev.goto(`http://127.0.0.1:${port}/?${new URLSearchParams({ layout: layoutUrl('react-dev') })}`);
          // The dev server may reload the page once after optimizing dependencies.
          await dev.waitForSelector('[data-testid="view"][data-state="fallback"]', { timeout: 30_000 });
          const why = await dev.getAttribute('[data-testid="reason"]', 'title');
          assert.match(why, new RegExp(`http://127\\.0\\.0\\.1:${port}/node_modules/\\.vite/deps/stormguard_bg\\.wasm is not a WebAssembly module`));
          assert.match(why, /optimizeDeps: \{ exclude: \['stormguard'\] \}/);
          await dev.close();
        } finally {
          await vite.stop();
        }
      });
    }

    test('4. the console shows no uncaught error', () => {
      assert.deepEqual(errors, []);
    });
  });
}

// ---- Toolchains beyond Vite: each a real project installing the tarball ----

describe('jest app (Jest 30: babel-jest, jsdom, CommonJS; and its ESM mode)', () => {
  let dir;
  before(async () => {
    dir = await installApp('jest');
  });

  /** Runs jest with `args`; returns its JSON report (--json). */
  async function jest(args, nodeArgs = []) {
    const out = join(dir, `report-${Math.random().toString(36).slice(2)}.json`);
    const env = { ...childEnv, STORMGUARD_FAULT_URL: fault.url, CI: 'true' };
    try {
      await run(process.execPath, [...nodeArgs, join(dir, 'node_modules/jest/bin/jest.js'), '--ci', '--json', `--outputFile=${out}`, ...args], { cwd: dir, env, maxBuffer: 64 << 20 });
    } catch (e) {
      throw new Error(`jest ${args.join(' ')} failed:\n${e.stdout}\n${e.stderr}`);
    }
    return JSON.parse(readFileSync(out, 'utf8'));
  }
  const passed = (report) => report.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'passed').map((a) => a.title));

  test('CommonJS mode, no stormguard config: the node and jsdom environments, and a React component', async () => {
    const report = await jest([]);
    assert.equal(report.numFailedTests, 0);
    assert.deepEqual(passed(report).sort(), [
      'a GET retried through a failure, in the node environment',
      'a POST without a key is sent once; the deadline ends a call that gets no answer',
      'createClient names the missing globals and the fix',
      'errors are the exported classes',
      'renders the fallback when there is neither network nor cache',
      'renders the network copy, then the cached copy when the server fails',
      'the retry waits for its backoff on the fake clock',
      'the wasm option names the file it could not read',
    ]);
  });

  test('ESM mode (--experimental-vm-modules)', async () => {
    const report = await jest(['--config', 'jest.esm.config.mjs'], ['--experimental-vm-modules', '--no-warnings']);
    assert.equal(report.numFailedTests, 0);
    assert.deepEqual(passed(report).sort(), ['a GET retried through a failure, in ESM mode', 'a timeout is a TimeoutError']);
  });
});

describe('vitest app (Vitest 4: stormguard/testing under fake timers, and the README\'s block as written)', () => {
  test('faultyFetch answers the app\'s calls; vi.advanceTimersByTimeAsync moves backoff, holds, open periods and timeouts', async () => {
    const dir = await installApp('vitest');
    const readme = readFileSync(join(dir, 'node_modules/stormguard/README.md'), 'utf8');
    writeFileSync(join(dir, 'test/orders.test.js'), readmeBlock(readme, 'orders.test.js'));
    const out = join(dir, 'report.json');
    await sh(process.execPath, [join(dir, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=json', `--outputFile=${out}`], dir);
    const report = JSON.parse(readFileSync(out, 'utf8'));
    const passed = report.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'passed').map((a) => a.title));
    assert.equal(report.numFailedTests, 0);
    assert.deepEqual(passed.sort(), [
      'a stalled body ends with the attempt timeout, on fake time',
      'an open breaker refuses at once, and lets a probe through when its open period ends',
      'an order is posted exactly once per key, through a reset and a 503',
      'an order is posted exactly once, through a reset and a 503',
      'per-test fake timers, run 1',
      'per-test fake timers, run 2',
      'per-test fake timers, run 3',
      'real timers after: a stalled body times out',
      'the list is the last good copy while the API is down',
      'the list shows the last good copy when the API is down',
    ]);
  });
});

describe('otel app (stormguard/otel with the OpenTelemetry SDK 2.12 in-memory exporters, api 1.9)', () => {
  let dir;
  before(async () => {
    dir = await installApp('otel');
  });
  test('the types check; spans and metrics of a call retried twice, a hedged call and a call refused by an open breaker', async () => {
    await sh(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', '.'], dir);
    const env = { ...childEnv, STORMGUARD_FAULT_URL: fault.url };
    try {
      await run(process.execPath, ['--test', '--test-reporter=spec', 'test/'], { cwd: dir, env, maxBuffer: 64 << 20 });
    } catch (e) {
      throw new Error(`the otel app's tests failed:\n${e.stdout}\n${e.stderr}`);
    }
  });

  // "Works in the browser (web SDK) and in Node": web/main.js bundled by esbuild with the SDK, in
  // Chromium, calling the fault server on another origin (traceparent is no CORS-safelisted header:
  // every attempt is preflighted, and the fault server allows it).
  test('in Chromium: a call retried twice, one call span, 3 attempt spans with resend counts, traceparent at the server on each', async () => {
    const { build } = await import('esbuild');
    const out = join(dir, 'web-dist');
    await build({
      entryPoints: [join(dir, 'web/main.js')],
      absWorkingDir: dir,
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      outdir: out,
      loader: { '.wasm': 'file' },
      logLevel: 'warning',
    });
    cpSync(join(dir, 'web/index.html'), join(out, 'index.html'));
    const site = await startServer({ staticRoot: out });
    const page = await browser.newPage();
    const errors = watchPage(page);
    try {
      await page.goto(`${site.url}/`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 10_000 });
      const id = `otel-web-${RUN}`;
      const r = await page.evaluate((u) => window.call(u), `${fault.url}/fail-first?n=2&id=${id}`);
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.equal(r.body.attempt, 3);
      const calls = r.spans.filter((s) => s.kind === 0); // INTERNAL
      const attempts = r.spans.filter((s) => s.kind === 2).sort((a, b) => a.start - b.start); // CLIENT
      assert.equal(calls.length, 1, JSON.stringify(r.spans.map((s) => [s.name, s.kind])));
      const [call] = calls;
      assert.equal(call.attributes['http.response.status_code'], 200);
      assert.equal(call.attributes['url.full'], `${fault.url}/fail-first?n=REDACTED&id=REDACTED`);
      assert.deepEqual(call.events.map((e) => [e.name, e.attributes['http.response.status_code']]), [['retry', 503], ['retry', 503]]);
      assert.equal(attempts.length, 3);
      assert.deepEqual(attempts.map((s) => s.attributes['http.request.resend_count']), [undefined, 1, 2]);
      assert.deepEqual(attempts.map((s) => s.attributes['http.response.status_code']), [503, 503, 200]);
      for (const s of attempts) {
        assert.equal(s.traceId, call.traceId);
        assert.equal(s.parentSpanId, call.spanId);
      }
      // What the server saw: each attempt's traceparent, the call's trace and that attempt's own span.
      const seen = (await log(id)).map((e) => e.traceparent);
      assert.deepEqual(seen, attempts.map((s) => `00-${call.traceId}-${s.spanId}-01`));
      // The price in a page, as the README says: a cross-origin call with traceparent is preflighted.
      const all = await (await fetch(`${fault.url}/_log?id=${id}`)).json();
      assert.ok(all.some((e) => e.preflight), 'the browser asked the server first (OPTIONS) whether traceparent may be sent');
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await site.close();
    }
  });
});

describe('ts-node app (Node-only TypeScript: no DOM lib, skipLibCheck false; CommonJS node16 and ESM nodenext)', () => {
  test('both projects type-check, and the compiled CommonJS calls out through require()', async () => {
    const dir = await installApp('ts-node');
    const tsc = join(dir, 'node_modules/typescript/bin/tsc');
    await sh(process.execPath, [tsc, '-p', 'tsconfig.cjs.json'], dir);
    await sh(process.execPath, [tsc, '-p', 'esm/tsconfig.json'], dir);
    const { stdout } = await sh(process.execPath, ['dist/main.js', fault.url], dir);
    assert.deepEqual(JSON.parse(stdout), { q: 'storm', app: 'ts-node', status: 404 });
  });
});

describe('esbuild app (no new URL rewriting: createClient({ wasm }))', () => {
  let site, page, errors;
  before(async () => {
    const dir = await installApp('esbuild');
    await sh(process.execPath, ['build.mjs'], dir);
    site = await startServer({ staticRoot: join(dir, 'dist') });
    page = await browser.newPage();
    errors = watchPage(page);
  });
  after(async () => {
    await page?.close();
    await site?.close();
  });
  const result = async (params) => {
    await page.goto(`${site.url}/?${new URLSearchParams(params)}`);
    await page.waitForSelector('[data-testid="out"]:not([data-state="loading"])', { timeout: 10_000 });
    return { state: await page.getAttribute('[data-testid="out"]', 'data-state'), text: await page.textContent('[data-testid="out"]') };
  };

  test('the wasm the file loader emitted, handed over: a call retried through a failure', async () => {
    const r = await result({ url: `${fault.url}/fail-first?n=1&id=esbuild-${RUN}` });
    assert.equal(r.state, 'ok', r.text);
    assert.equal(JSON.parse(r.text).body.attempt, 2);
  });

  test('a wrong wasm URL: the error names the file requested and the fix', async () => {
    const missing = await result({ url: `${fault.url}/echo?id=esbuild-x`, wasm: '/stormguard_bg.wasm' });
    assert.equal(missing.state, 'error');
    assert.match(missing.text, new RegExp(`^OptionsError: stormguard: loading the wasm module ${site.url}/stormguard_bg\\.wasm failed with HTTP 404`));
    assert.match(missing.text, /createClient\(\{ wasm:/);
    const html = await result({ url: `${fault.url}/echo?id=esbuild-x`, wasm: '/index.html' });
    assert.match(html.text, new RegExp(`^OptionsError: stormguard: ${site.url}/index\\.html is not a WebAssembly module`));
  });

  test('no uncaught error', () => {
    assert.deepEqual(errors.filter((e) => !/status of 404/.test(e)), []);
  });
});

// The README's "bundled servers" item for Vite SSR: stormguard bundled into dist/server.js
// (ssr.noExternal), run with node from another working directory.
describe('vite-ssr app (vite build --ssr with ssr.noExternal: [\'stormguard\'], run from another folder)', () => {
  let dir, dist, elsewhere;
  before(async () => {
    dir = await installApp('vite-ssr');
    await sh(process.execPath, [join(dir, 'node_modules/vite/bin/vite.js'), 'build', '--ssr', 'src/server.js', '--logLevel', 'warn'], dir);
    dist = join(dir, 'dist');
    elsewhere = mkdtempSync(join(work, 'cwd-'));
  });
  /** Runs the bundle from `elsewhere` (neither the app nor dist/); its one line of JSON. */
  const serve = async (id, wasm) => {
    const args = [join(dist, 'server.js'), fault.url, `vite-ssr-${id}-${RUN}`, ...(wasm ? [wasm] : [])];
    const { stdout } = await run(process.execPath, args, { cwd: elsewhere, env: childEnv, timeout: 30_000 });
    return JSON.parse(stdout);
  };
  const wasmFile = () => join(dir, 'node_modules/stormguard/stormguard_bg.wasm');

  test('stormguard is in the bundle, not imported from node_modules', () => {
    const code = readFileSync(join(dist, 'server.js'), 'utf8');
    assert.doesNotMatch(code, /from ["']stormguard["']/);
  });

  test('no wasm beside the bundle: an OptionsError naming the file there and the fix', async () => {
    const r = await serve('missing');
    assert.equal(r.ok, false, JSON.stringify(r));
    assert.equal(r.name, 'OptionsError');
    assert.equal(r.option, 'wasm');
    assert.ok(r.message.includes(join(dist, 'stormguard_bg.wasm')), r.message);
    assert.match(r.message, /ENOENT/);
    assert.match(r.message, /copy stormguard_bg\.wasm beside the bundle/);
    // Its other fix must work from here too: no path read from the current directory.
    assert.doesNotMatch(r.message, /readFileSync\('node_modules/);
    assert.match(r.message, /a relative path is read from the bundle's folder/);
  });

  test("the README's recipe: stormguard_bg.wasm copied beside the bundle, a call retried through a failure", async () => {
    cpSync(wasmFile(), join(dist, 'stormguard_bg.wasm'));
    try {
      const r = await serve('copied');
      assert.equal(r.ok, true, JSON.stringify(r));
      assert.equal(r.body.attempt, 2);
    } finally {
      rmSync(join(dist, 'stormguard_bg.wasm'));
    }
  });

  test('a relative wasm path is read from the bundle\'s folder, not the current directory', async () => {
    mkdirSync(join(dist, 'wasm'), { recursive: true });
    cpSync(wasmFile(), join(dist, 'wasm/stormguard_bg.wasm'));
    const r = await serve('relative', 'wasm/stormguard_bg.wasm');
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.body.attempt, 2);
  });
});

// The README's worker.js, as written, in Vite and webpack builds.
describe('worker app (the README\'s Web Worker snippet, in Vite 8 and webpack 5)', () => {
  let dir, browserPage, errors;
  const sites = {};
  before(async () => {
    dir = await installApp('worker');
    await sh(process.execPath, [join(dir, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], dir);
    await sh(process.execPath, [join(dir, 'node_modules/webpack-cli/bin/cli.js'), '--config', 'webpack.config.cjs'], dir);
    cpSync(join(dir, 'webpack.html'), join(dir, 'dist-webpack/index.html'));
    await sh(process.execPath, [join(dir, 'node_modules/webpack-cli/bin/cli.js'), '--config', 'webpack.page.config.cjs'], dir);
    cpSync(join(dir, 'webpack-page.html'), join(dir, 'dist-webpack-page/index.html'));
    sites.vite = await startServer({ staticRoot: join(dir, 'dist') });
    sites.webpack = await startServer({ staticRoot: join(dir, 'dist-webpack') });
    sites.webpackPage = await startServer({ staticRoot: join(dir, 'dist-webpack-page') });
    browserPage = await browser.newPage();
    errors = watchPage(browserPage);
  });
  after(async () => {
    await browserPage?.close();
    await Promise.all(Object.values(sites).map((s) => s.close()));
  });

  test('src/worker.js is the README snippet, character for character', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const snippet = /```js\n\/\/ main\.js\n[\s\S]*?\n\n(\/\/ worker\.js[\s\S]*?)```/.exec(readme);
    assert.ok(snippet, 'the README has the main.js + worker.js snippet');
    assert.equal(readFileSync(join(root, 'tests/apps/worker/src/worker.js'), 'utf8'), snippet[1]);
  });

  /** Loads `base` with three messages posted at once; asserts all three are answered. */
  async function threeReplies(page, base, id) {
    await page.goto(`${base}/?${new URLSearchParams({ url: `${fault.url}/fail-first?n=1&id=${id}`, n: '3' })}`);
    await page.waitForSelector('[data-testid="out"][data-count="3"]', { timeout: 20_000 });
    const replies = JSON.parse(await page.textContent('[data-testid="out"]'));
    assert.equal(replies.length, 3);
    for (const r of replies) assert.equal(r.ok, true, r.error);
  }

  for (const bundler of ['vite', 'webpack']) {
    test(`${bundler} build: messages posted at once are all answered, on every load`, async () => {
      for (let load = 0; load < 5; load++) await threeReplies(browserPage, sites[bundler].url, `worker-${bundler}-${RUN}-${load}`);
      assert.deepEqual(errors, []);
    });
  }

  test('webpack: README\'s rule and preload tag, and the page asks for the wasm once', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const rule = readFileSync(join(root, 'tests/apps/worker/webpack.page.config.cjs'), 'utf8').match(/^ *rules: \[.*\],$/m)?.[0];
    assert.ok(rule && readme.includes(rule), 'README shows the rule the app uses');
    const tag = readFileSync(join(root, 'tests/apps/worker/webpack-page.html'), 'utf8').match(/<link rel="preload"[^>]*>/)?.[0];
    assert.ok(tag && readme.includes(tag), 'README shows the tag the page uses');
    assert.ok(existsSync(join(dir, 'dist-webpack-page/stormguard_bg.wasm')), 'webpack emitted the wasm under its fixed name');
    const site = sites.webpackPage;
    const wasmRequests = async () =>
      (await (await fetch(`${site.url}/_log?id=default`)).json()).filter((e) => e.path.endsWith('.wasm')).length;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const pageErrors = watchPage(page);
      await page.goto(`${site.url}/`);
      await page.waitForSelector('[data-testid="out"][data-state="ready"]', { timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await wasmRequests(), 1);
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  });

  test('the Vite 8 dev server, with no optimizeDeps config, serves it too', async () => {
    const port = await freePort();
    const vite = await startProcess([join(dir, 'node_modules/vite/bin/vite.js'), '--port', String(port), '--strictPort', '--host', '127.0.0.1'],
      { cwd: dir, env: childEnv, ready: `127.0.0.1:${port}` });
    try {
      const page = await browser.newPage();
      const devErrors = watchPage(page);
      await threeReplies(page, `http://127.0.0.1:${port}`, `worker-dev-${RUN}`);
      await page.close();
      assert.deepEqual(devErrors, []);
    } finally {
      await vite.stop();
    }
  });
});

describe('next app (Next.js 16 App Router, no config: server component, route handler, client component)', () => {
  let dir;
  before(async () => {
    dir = await installApp('next');
  });

  for (const bundler of ['turbopack', 'webpack']) {
    test(`next build${bundler === 'webpack' ? ' --webpack' : ''}, then next start: every kind of component works`, async () => {
      const next = join(dir, 'node_modules/next/dist/bin/next');
      const env = { ...childEnv, NEXT_TELEMETRY_DISABLED: '1', STORMGUARD_FAULT_URL: fault.url };
      const built = await run(process.execPath, [next, 'build', ...(bundler === 'webpack' ? ['--webpack'] : [])], { cwd: dir, env, maxBuffer: 64 << 20 })
        .catch((e) => { throw new Error(`next build failed:\n${e.stdout}\n${e.stderr}`); });
      const buildLog = built.stdout + built.stderr;
      assert.doesNotMatch(buildLog, /unhandledRejection|Received an instance of URL|Error/, 'a clean build and prerender');
      assert.match(buildLog, /○ \/about/, 'the page importing the module-scope client was prerendered');

      const port = await freePort();
      const server = await startProcess([next, 'start', '-p', String(port), '-H', '127.0.0.1'], { cwd: dir, env, ready: 'Ready in' });
      const base = `http://127.0.0.1:${port}`;
      try {
        // A server component: a call retried through one failure, on the server.
        const home = await (await fetch(`${base}/`)).text();
        assert.match(home, /data-testid="server">attempt <!-- -->2</);
        // A route handler.
        const route = await fetch(`${base}/api/status?id=next-route-${bundler}-${RUN}`);
        assert.equal(route.status, 200);
        assert.deepEqual((await route.json()).body, { ok: true, attempt: 2 });
        // The prerendered page.
        assert.match(await (await fetch(`${base}/about`)).text(), /requests so far/);
        // A client component in Chromium: the browser build, the wasm served by Next.
        const page = await browser.newPage();
        const errors = watchPage(page);
        const doc = encodeURIComponent(JSON.stringify({ title: `From the API (${bundler})` }));
        await page.goto(`${base}/client?layout=${encodeURIComponent(`${fault.url}/json?id=next-client-${RUN}&body=${doc}`)}`);
        await page.waitForSelector('[data-testid="view"][data-state="network"]', { timeout: 15_000 });
        assert.equal(await page.textContent('[data-testid="title"]'), `From the API (${bundler})`);
        await page.evaluate(() => localStorage.clear());
        await page.goto(`${base}/client?layout=${encodeURIComponent(`${fault.url}/status/503?id=next-client-down-${RUN}`)}`);
        await page.waitForSelector('[data-testid="view"][data-state="fallback"]', { timeout: 15_000 });
        assert.equal(await page.textContent('[data-testid="title"]'), 'Built-in layout');
        await page.screenshot({ path: join(shots, `next-${bundler}-client.png`), fullPage: true });
        await page.close();
        assert.deepEqual(errors, []);
        assert.doesNotMatch(server.log(), /unhandledRejection|Received an instance of URL|Error/, 'a clean server log');
      } finally {
        await server.stop();
      }
    });
  }
});
