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
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { launchChromium, root } from './browser.mjs';
import { startServer } from '../server/server.mjs';

const run = promisify(execFile);
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

// Under `npm test`, npm exports its resolved config as npm_config_* (local_prefix
// among them, the workspace root): the app installs must not inherit that.
const KEEP = /^npm_config_(cache|userconfig|globalconfig|registry|cafile|proxy|https_proxy|noproxy|strict_ssl)$/i;
const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || KEEP.test(k)));
childEnv.npm_config_update_notifier = 'false';

async function sh(cmd, args, cwd) {
  try {
    return await run(cmd, args, { cwd, maxBuffer: 64 << 20, env: childEnv });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`);
  }
}

before(async () => {
  assert.ok(existsSync(join(root, 'pkg/package.json')), 'pkg/ is missing: run `node scripts/build.mjs` first');
  mkdirSync(shots, { recursive: true });
  work = mkdtempSync(join(tmpdir(), 'stormguard-apps-'));
  await sh('npm', ['pack', './pkg', '--pack-destination', work, '--silent'], root);
  tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
  fault = await startServer();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await fault?.close();
  if (work && !process.env.STORMGUARD_KEEP_APPS) rmSync(work, { recursive: true, force: true });
});

/** Copies, installs and builds one app; returns the dist folder. */
async function buildApp(name) {
  const dir = join(work, name);
  cpSync(join(root, 'tests/apps', name), dir, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|dist)$/.test(src),
  });
  const quiet = ['--no-audit', '--no-fund', '--loglevel=error'];
  await sh('npm', ['ci', '--prefer-offline', ...quiet], dir);
  await sh('npm', ['install', '--no-save', '--prefer-offline', ...quiet, tarball], dir);
  await sh(process.execPath, [join(dir, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], dir);
  const dist = join(dir, 'dist');
  assert.ok(readdirSync(join(dist, 'assets')).some((f) => f.endsWith('.wasm')), 'vite emitted the wasm as an asset');
  return dist;
}

/** Uncaught exceptions and console errors, less the browser's own line for each failed HTTP status. */
function watchPage(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (/^Failed to load resource: the server responded with a status of 503/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  return errors;
}

const log = async (id) => (await (await fetch(`${fault.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

/** Waits until the fault server has logged a request for `id` and returns it. */
async function arrived(id, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const entries = await log(id);
    if (entries.length > 0) return entries;
    if (Date.now() > end) throw new Error(`no request for ${id} reached the fault server`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits until the single logged request for `id` was closed by the client; returns [entry, all entries]. */
async function closedByClient(id, timeoutMs = 2000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const entries = await log(id);
    if (entries[0]?.closedAt != null) return [entries[0], entries];
    if (Date.now() > end) throw new Error(`the request for ${id} was not aborted: ${JSON.stringify(entries)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

for (const app of ['react', 'vue']) {
  describe(`${app} app (Vite build of the packed package)`, () => {
    let site, context, page, errors;
    const layoutUrl = (id, doc = LAYOUT) => `${fault.url}/json?id=${id}&body=${encodeURIComponent(JSON.stringify(doc))}`;
    const failUrl = (id) => `${fault.url}/status/503?id=${id}`;
    const hangUrl = (id) => `${fault.url}/hang?id=${id}`;
    const open = (params) => page.goto(`${site.url}/?${new URLSearchParams(params)}`);
    const state = (s) => page.waitForSelector(`[data-testid="view"][data-state="${s}"]`, { timeout: 10_000 });
    const shot = (n) => page.screenshot({ path: join(shots, `${app}-${n}.png`), fullPage: true });

    before(async () => {
      const dist = await buildApp(app);
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

    test('4. the console shows no uncaught error', () => {
      assert.deepEqual(errors, []);
    });
  });
}
