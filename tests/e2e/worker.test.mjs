// The package inside a Web Worker: global fetch, no window, no location.href
// of a page (the worker's own), crypto and performance from the worker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser;
before(async () => {
  servers = await startServers();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

test('a call made inside a Web Worker', async () => {
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  const result = await page.evaluate((fault) => new Promise((resolve) => {
    const w = new Worker('/tests/e2e/pages/worker.js', { type: 'module' });
    w.onmessage = (e) => resolve(e.data);
    w.onerror = (e) => resolve({ ok: false, error: e.message });
    w.postMessage({ fault });
  }), servers.fault);
  assert.equal(result.ok, true, result.error);
  assert.equal(result.body.attempt, 2);
  assert.equal(result.stats.attempts, 2);
  assert.deepEqual(errors, []);
});

test('calls answered by a module Service Worker through client.fetch()', async () => {
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  const result = await page.evaluate(async (fault) => {
    const sw = navigator.serviceWorker;
    const controlled = new Promise((resolve) => sw.addEventListener('controllerchange', resolve, { once: true }));
    await sw.register(`/tests/e2e/pages/sw.js?fault=${encodeURIComponent(fault)}`, { type: 'module', scope: '/tests/e2e/pages/' });
    if (!sw.controller) await controlled;
    return (await fetch('/tests/e2e/pages/api/user?id=sw')).json();
  }, servers.fault);
  assert.equal(result.ok, true, result.error);
  assert.equal(result.status, 200);
  assert.equal(result.body.attempt, 2, 'the 503 retried once inside the Service Worker');
  assert.equal(result.stats.attempts, 2);
  assert.deepEqual(errors, []);
});
