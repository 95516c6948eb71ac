// Offline awareness in a real page: playwright's context.setOffline flips
// navigator.onLine and fires 'offline'/'online', as a device losing its
// network does. While offline no attempt is spent and nothing counts
// against the breaker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser, context, page, errors;
before(async () => {
  servers = await startServers();
  browser = await launchChromium();
  context = await browser.newContext();
  page = await context.newPage();
  errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  await page.waitForFunction(() => window.ready === true);
  // Load the wasm while online (the test server sends no-store: offline,
  // the browser could not fetch it).
  await page.evaluate(() => window.stormguard.createClient());
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

const arrivals = async (id) =>
  (await (await fetch(`${servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight).length;

test('waitForOnline: false fails at once with an offline NetworkError and sends nothing', async () => {
  await context.setOffline(true);
  const result = await page.evaluate(async (fault) => {
    const client = await window.stormguard.createClient({ waitForOnline: false });
    const started = performance.now();
    const e = await client.request(`${fault}/echo?id=offline-fail`).catch((e) => e);
    return { name: e.name, offline: e.offline, attempts: e.attempts, ms: performance.now() - started, stats: client.stats() };
  }, servers.fault);
  await context.setOffline(false);
  assert.equal(result.name, 'NetworkError');
  assert.equal(result.offline, true);
  assert.equal(result.attempts, 0);
  // At once: not after the deadline (20 s) that waiting for the network would take. (Bounded at
  // 50 ms before, which the first call of a page, compiling as it goes, overran on a loaded machine.)
  assert.ok(result.ms < 1000, `${result.ms} ms`);
  assert.equal(result.stats.attempts, 0);
  assert.equal(await arrivals('offline-fail'), 0);
});

test('a call made offline waits for the network and then goes through', async () => {
  await context.setOffline(true);
  const pending = page.evaluate(async (fault) => {
    const client = await window.stormguard.createClient();
    window.offlineClient = client;
    const body = await client.request(`${fault}/echo?id=offline-wait`);
    return { method: body.method, stats: client.stats() };
  }, servers.fault);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await arrivals('offline-wait'), 0, 'nothing sent while offline');
  const waiting = await page.evaluate(() => window.offlineClient.stats());
  assert.equal(waiting.attempts, 0, 'no attempt spent while offline');
  await context.setOffline(false);
  const result = await pending;
  assert.equal(result.method, 'GET');
  assert.equal(result.stats.attempts, 1);
  assert.equal(await arrivals('offline-wait'), 1);
});

test('offline for the whole deadline: offline NetworkError, no breaker failures', async () => {
  await context.setOffline(true);
  const result = await page.evaluate(async (fault) => {
    const client = await window.stormguard.createClient({
      deadlineMs: 300, breaker: { minSamples: 1, consecutiveFailures: 1 },
    });
    const errs = [];
    for (let i = 0; i < 3; i++) errs.push(await client.request(`${fault}/echo?id=offline-deadline`).catch((e) => e));
    return {
      errs: errs.map((e) => [e.name, e.offline, e.retryDenied]),
      breakers: client.breakers(),
    };
  }, servers.fault);
  await context.setOffline(false);
  for (const e of result.errs) assert.deepEqual(e, ['NetworkError', true, 'deadline']);
  assert.ok(result.breakers.every((b) => b.state === 'closed' && b.samples === 0), JSON.stringify(result.breakers));
  assert.equal(await arrivals('offline-deadline'), 0);
  assert.deepEqual(errors, []);
});

test('a request that fails while the device is offline is not a breaker failure; the retry waits', async () => {
  // playwright's offline emulation does not cut a request already in flight,
  // so the page flips navigator.onLine itself while the first attempt is
  // reading a body that the server then resets.
  const result = await page.evaluate(async (fault) => {
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const client = await window.stormguard.createClient({
      deadlineMs: 5000, retry: { baseDelayMs: 10, maxAttempts: 2 }, breaker: { minSamples: 1, consecutiveFailures: 5 },
    });
    const next = (type) => new Promise((r) => { const off = client.on(type, (e) => { off(); r(e); }); });
    // Offline once the first attempt is out (not after a fixed time, which a busy machine can
    // spend before it is sent), and the failure seen while offline: its 'retry' event.
    const sent = next('attempt');
    const failed = next('retry');
    const call = client.request(`${fault}/reset-mid?bytes=10&wait=300&id=offline-mid`).catch((e) => e);
    await sent;
    Object.defineProperty(navigator, 'onLine', { configurable: true, get: () => false });
    window.dispatchEvent(new Event('offline'));
    await failed;
    await sleep(300); // the retry's backoff is 10-20 ms: were it not waiting, it would be out
    const waiting = client.stats().attempts;
    delete navigator.onLine;
    window.dispatchEvent(new Event('online'));
    const e = await call;
    return { waiting, name: e.name, offline: e.offline ?? false, attempts: client.stats().attempts, breakers: client.breakers() };
  }, servers.fault);
  assert.equal(result.waiting, 1, 'after the offline failure the call waits without attempting');
  assert.equal(result.attempts, 2);
  assert.equal(result.name, 'NetworkError');
  assert.equal(result.offline, false, 'the second failure happened online');
  assert.equal(result.breakers[0].samples, 1, 'only the online failure is a breaker sample');
});
