// The built package (pkg/) loaded in Chromium as plain ESM from a static
// server, with no bundler, making real calls to the fault server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser, page, errors;

before(async () => {
  servers = await startServers();
  browser = await launchChromium();
  page = await browser.newPage();
  errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  await page.waitForFunction(() => window.ready === true);
});

after(async () => {
  await browser?.close();
  await servers?.close();
});

test('createClient and a real GET through the package', async () => {
  const result = await page.evaluate(async (fault) => {
    const client = await window.stormguard.createClient();
    const body = await client.request(`${fault}/echo?id=esm-get`, { query: { q: 'storm' } });
    return { body, stats: client.stats() };
  }, servers.fault);
  assert.equal(result.body.method, 'GET');
  assert.equal(result.body.query.q, 'storm');
  assert.equal(result.stats.requests, 1);
  assert.equal(result.stats.attempts, 1);
  assert.deepEqual(errors, []);
});

test('errors are instances of the exported classes', async () => {
  const result = await page.evaluate(async (fault) => {
    const { createClient, TimeoutError, StormguardError, OptionsError, isStormguardError } = window.stormguard;
    const client = await createClient({ timeoutMs: 200, retry: false });
    let timeout;
    try {
      await client.request(`${fault}/hang?id=esm-timeout`);
    } catch (e) {
      timeout = {
        isTimeout: e instanceof TimeoutError, isBase: e instanceof StormguardError,
        isError: e instanceof Error, guard: isStormguardError(e),
        name: e.name, code: e.code, phase: e.phase, attempts: e.attempts,
      };
    }
    let options;
    try {
      await createClient({ concurrency: { max: 0 } });
    } catch (e) {
      options = { isOptions: e instanceof OptionsError, option: e.option, code: e.code };
    }
    return { timeout, options };
  }, servers.fault);
  assert.deepEqual(result.timeout, {
    isTimeout: true, isBase: true, isError: true, guard: true,
    name: 'TimeoutError', code: 'TIMEOUT', phase: 'attempt', attempts: 1,
  });
  assert.deepEqual(result.options, { isOptions: true, option: 'concurrency.max', code: 'INVALID_OPTIONS' });
});

test('close() rejects later calls with AbortError', async () => {
  const result = await page.evaluate(async (fault) => {
    const { createClient } = window.stormguard;
    const client = await createClient();
    const pending = client.request(`${fault}/hang?id=esm-close`).catch((e) => [e.name, e.reason]);
    await new Promise((r) => setTimeout(r, 50));
    client.close();
    const later = await client.request(`${fault}/echo?id=esm-close`).catch((e) => [e.name, e.reason]);
    return { pending: await pending, later };
  }, servers.fault);
  assert.deepEqual(result, { pending: ['AbortError', 'client closed'], later: ['AbortError', 'client closed'] });
});
