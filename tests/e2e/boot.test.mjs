// A call's first attempt sent by the boot build before the engine is in (issue 39 item 2;
// pkg-template/boot.js, src/boot.rs, src/web/adopt.rs), in Chromium: the page
// (tests/e2e/pages/boot.html) makes its client and call at module scope while the test holds the
// engine's wasm download. The call's request leaves at once; a 2xx is its answer before the engine is
// in, and the engine gets the sample when it arrives; any other end waits for the engine, which adopts
// the attempt as the call's first (its retry is attempt 2) and never retries against a breaker another
// tab opened meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, openWithWasmHeld, startServers } from './browser.mjs';

let servers, browser;

before(async () => {
  servers = await startServers();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

/**
 * tests/e2e/pages/boot.html with `url` called at module scope and the engine's wasm held:
 * `{ page, errors, release(fn) }`, `release` letting the wasm route go on with `fn(route)`
 * (default: continue). `sent(part)` counts the page's requests whose URL has `part`; `hold`:
 * `[part, promise]`, the page's requests whose URL has `part` held until `promise` settles.
 */
async function heldPage(context, { url, options, hold } = {}) {
  const requests = [];
  const answers = [];
  const q = new URLSearchParams();
  if (url) q.set('url', url);
  if (options) q.set('options', JSON.stringify(options));
  const { page, errors, answer } = await openWithWasmHeld(context, `${servers.site}/tests/e2e/pages/boot.html?${q}`, async (page) => {
    if (hold) {
      await page.route((u) => u.href.startsWith(servers.fault) && u.href.includes(hold[0]), async (route) => {
        await hold[1];
        await route.continue();
      });
    }
    page.on('request', (r) => requests.push(r.url()));
    page.on('response', (r) => answers.push(`${r.status()} ${r.url()}`));
  });
  return {
    page,
    errors,
    release: (fn = (route) => route.continue()) => answer(fn),
    sent: (part) => requests.filter((u) => u.startsWith(servers.fault) && u.includes(part)).length,
    answered: async (status, part) => {
      for (let i = 0; !answers.some((a) => a.startsWith(`${status} ${servers.fault}`) && a.includes(part)); i++) {
        if (i > 1000) throw new Error(`no ${status} answer to ${part} while the wasm is held: the call did not go`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

test('a call made before the engine is in goes at once; its 2xx is its answer; the engine then counts it', async () => {
  const context = await browser.newContext();
  try {
    const url = `${servers.fault}/echo?id=boot-ok`;
    const { page, errors, release, sent } = await heldPage(context, { url });
    await page.waitForFunction(() => window.result !== undefined);
    assert.equal(await page.evaluate(() => window.result.body?.method), 'GET', 'answered while the wasm is held');
    assert.equal(await page.evaluate(() => window.api.stats().requests), 0, 'the engine is not in');
    release();
    await page.evaluate(() => window.api.ready.then(() => undefined));
    await page.waitForFunction(() => window.api.stats().requests === 1);
    const stats = await page.evaluate(() => window.api.stats());
    assert.deepEqual([stats.requests, stats.attempts, stats.retries, stats.failures], [1, 1, 0, 0]);
    assert.deepEqual(await page.evaluate(() => window.events), ['attempt 1'], 'the listener added before sees it');
    assert.equal(sent('boot-ok'), 1, 'one request on the wire');
    // Once the engine is in, calls are its own.
    assert.equal(await page.evaluate(() => window.call(window.location.origin + '/pkg/package.json').then((r) => r.body?.name)), 'stormguard');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('at most 6 boot attempts at once (the default concurrency.max): the other calls wait for the engine', async () => {
  const context = await browser.newContext();
  try {
    const { page, release, sent } = await heldPage(context);
    await page.evaluate((u) => {
      window.done = [];
      for (let i = 0; i < 8; i++) window.call(`${u}/echo?id=boot-cap-${i}`).then((r) => window.done.push(r.body?.query.id));
    }, servers.fault);
    await page.waitForFunction(() => window.done.length === 6);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await page.evaluate(() => window.done.length), 6, 'two wait for the engine');
    assert.equal(sent('boot-cap-'), 6);
    release();
    await page.waitForFunction(() => window.done.length === 8);
    await page.waitForFunction(() => window.api.stats().requests === 8);
    const stats = await page.evaluate(() => window.api.stats());
    assert.deepEqual([stats.requests, stats.attempts], [8, 8]);
    assert.equal(sent('boot-cap-'), 8);
  } finally {
    await context.close();
  }
});

test("a call's failed first attempt waits for the engine, which adopts it: its retry is attempt 2", async () => {
  const context = await browser.newContext();
  try {
    const url = `${servers.fault}/fail-first?key=boot-adopt&n=1`;
    const { page, errors, release, sent, answered } = await heldPage(context, { url });
    await answered(503, 'boot-adopt');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await page.evaluate(() => window.result), undefined, 'the 503 waits for the engine');
    release();
    await page.waitForFunction(() => window.result !== undefined);
    assert.deepEqual(await page.evaluate(() => window.result.body), { ok: true, attempt: 2 });
    const stats = await page.evaluate(() => window.api.stats());
    assert.deepEqual([stats.requests, stats.attempts, stats.retries], [1, 2, 1]);
    assert.deepEqual(await page.evaluate(() => window.events), ['attempt 1', 'retry 1', 'attempt 2']);
    assert.equal(sent('boot-adopt'), 2);
    assert.deepEqual(errors.filter((e) => !/status of 503/.test(e)), []);
  } finally {
    await context.close();
  }
});

test('an engine that fails to load rejects the call the boot build could not finish with OptionsError(wasm)', async () => {
  const context = await browser.newContext();
  try {
    const url = `${servers.fault}/fail-first?key=boot-noload&n=5`;
    const { page, release } = await heldPage(context, { url });
    release((route) => route.fulfill({ status: 404, body: 'not here' }));
    await page.waitForFunction(() => window.result !== undefined);
    const { error } = await page.evaluate(() => window.result);
    assert.deepEqual([error.name, error.option], ['OptionsError', 'wasm']);
    assert.match(error.message, /stormguard_bg\.wasm failed with HTTP 404/);
  } finally {
    await context.close();
  }
});

test('a breaker another tab opens while the adopted call waits refuses its retry', async () => {
  const context = await browser.newContext();
  try {
    const api = `${servers.fault}/fail-first?key=boot-open&n=100`;
    // The boot attempt's answer held until the other tab has opened the key's breaker.
    let hold;
    const held = new Promise((r) => { hold = r; });
    const { page, release, sent } = await heldPage(context, { url: api, hold: ['fail-first', held] });
    release();
    await page.evaluate(() => window.api.ready.then(() => undefined));
    // Another tab of the origin: its failures open the key's breaker and it says so.
    const other = await context.newPage();
    await other.goto(`${servers.site}/tests/e2e/pages/boot.html`);
    await other.waitForFunction(() => window.made === true);
    await other.evaluate(() => window.api.ready.then(() => undefined));
    await other.evaluate(async (u) => {
      for (let i = 0; i < 10 && !window.api.breakers().some((b) => b.state === 'open'); i++) {
        await window.call(u, { retry: { maxAttempts: 1 } });
      }
    }, api);
    assert.equal(await other.evaluate(() => window.api.breakers()[0]?.state), 'open');
    await page.waitForFunction(() => window.api.breakers().some((b) => b.state === 'open'));
    const before = sent('boot-open');
    hold();
    await page.waitForFunction(() => window.result !== undefined);
    const { error } = await page.evaluate(() => window.result);
    assert.ok(['CircuitOpenError', 'HttpError'].includes(error.name), error.name);
    assert.equal(sent('boot-open'), before, 'no retry went out');
    const stats = await page.evaluate(() => window.api.stats());
    assert.equal(stats.attempts, 1);
  } finally {
    await context.close();
  }
});

test('boot attempts still in flight when the engine arrives hold its concurrency slots until they end', async () => {
  const context = await browser.newContext();
  try {
    let hold;
    const held = new Promise((r) => { hold = r; });
    const { page, release, sent } = await heldPage(context, { hold: ['boot-slot-', held] });
    await page.evaluate((u) => {
      window.done = [];
      for (let i = 0; i < 6; i++) window.call(`${u}/echo?id=boot-slot-${i}`).then((r) => window.done.push(r.body?.query.id));
    }, servers.fault);
    for (let i = 0; sent('boot-slot-') < 6; i++) {
      if (i > 1000) throw new Error('the 6 boot attempts did not go');
      await new Promise((r) => setTimeout(r, 20));
    }
    release();
    await page.evaluate(() => window.api.ready.then(() => undefined));
    assert.equal(await page.evaluate(() => window.api.stats().inFlight), 6, 'the 6 boot attempts hold the 6 slots');
    // A call made now is the engine's: it waits for a slot as it would behind 6 of its own attempts.
    await page.evaluate((u) => {
      window.call(`${u}/echo?id=boot-late`).then((r) => window.done.push(r.body?.query.id));
    }, servers.fault);
    await page.waitForFunction(() => window.api.stats().queued === 1);
    assert.equal(sent('boot-late'), 0, 'not sent beside them');
    hold();
    await page.waitForFunction(() => window.done.length === 7);
    await page.waitForFunction(() => window.api.stats().requests === 7);
    const stats = await page.evaluate(() => window.api.stats());
    assert.deepEqual([stats.inFlight, stats.queued, stats.attempts], [0, 0, 7], 'every slot back');
    assert.equal(sent('boot-late'), 1);
  } finally {
    await context.close();
  }
});

test('calls aborted before the engine is in are counted by it when it arrives, as it counts its own: nothing is sent again', async () => {
  const context = await browser.newContext();
  let hold;
  const held = new Promise((r) => { hold = r; });
  try {
    const { page, release, sent } = await heldPage(context, { hold: ['boot-abort-', held] });
    await page.evaluate((u) => {
      window.ended = [];
      const end = (r) => window.ended.push(r.error?.name);
      window.early = new AbortController();
      const signal = window.early.signal;
      window.call(`${u}/echo?id=boot-abort-sent`, { signal }).then(end);
      // One the boot build does not send (an option of the engine's): it waits for the engine.
      window.call(`${u}/echo?id=boot-abort-waits`, { signal, retry: { maxAttempts: 2 } }).then(end);
    }, servers.fault);
    for (let i = 0; sent('boot-abort-sent') < 1; i++) {
      if (i > 1000) throw new Error('the boot attempt did not go');
      await new Promise((r) => setTimeout(r, 20));
    }
    await page.evaluate(() => window.early.abort());
    await page.waitForFunction(() => window.ended.length === 2);
    assert.deepEqual(await page.evaluate(() => window.ended), ['AbortError', 'AbortError']);
    release();
    await page.evaluate(() => window.api.ready.then(() => undefined));
    await page.waitForFunction(() => window.api.stats().requests === 2);
    const stats = await page.evaluate(() => window.api.stats());
    // Each a request and a failure, the boot build's attempt an attempt (no sample, no retry).
    assert.deepEqual(
      [stats.requests, stats.attempts, stats.retries, stats.failures, stats.inFlight, stats.queued],
      [2, 1, 0, 2, 0, 0],
    );
    assert.deepEqual(await page.evaluate(() => window.events), ['attempt 1']);
    assert.deepEqual(await page.evaluate(() => window.api.breakers().map((b) => b.samples)), [0]);
    assert.equal(sent('boot-abort-'), 1, 'nothing sent again');
  } finally {
    hold();
    await context.close();
  }
});

test("a client's options are read once, when it is made: not again by each call the boot build sends, nor by the engine", async () => {
  const context = await browser.newContext();
  try {
    const { page, release, sent } = await heldPage(context);
    const counted = () => page.evaluate(() => ({ ...window.reads }));
    const made = await page.evaluate(async () => {
      const { createClientSync } = await import('/pkg/index.js'); // the page's own module
      // Each member a getter that counts its reads, the headers' value too.
      const reads = (window.reads = {});
      const counting = (values) => {
        const o = {};
        for (const [k, v] of Object.entries(values)) {
          Object.defineProperty(o, k, { enumerable: true, get: () => ((reads[k] = (reads[k] ?? 0) + 1), v) });
        }
        return o;
      };
      window.client = createClientSync(counting({ deadlineMs: 15000, timeoutMs: 5000, headers: counting({ 'x-a': '1' }) }));
      return { ...reads };
    });
    const bodies = await page.evaluate((u) => Promise.all([1, 2, 3].map((i) => window.client.request(`${u}/echo?id=boot-reads-${i}`))), servers.fault);
    assert.equal(sent('boot-reads-'), 3, 'the boot build sent them');
    assert.deepEqual(bodies.map((b) => b.headers['x-a']), ['1', '1', '1']);
    assert.deepEqual(await counted(), made, 'no read by the calls');
    assert.deepEqual(made, { deadlineMs: 1, timeoutMs: 1, headers: 1, 'x-a': 1 });
    release();
    await page.evaluate(() => window.client.ready.then(() => undefined));
    assert.equal((await page.evaluate((u) => window.client.request(`${u}/echo?id=boot-reads-4`), servers.fault)).headers['x-a'], '1');
    assert.deepEqual(await counted(), made, 'none by the engine');
  } finally {
    await context.close();
  }
});

test('calls whose deadline passes before the engine is in are counted by it when it arrives, as it counts its own: nothing is sent again', async () => {
  const context = await browser.newContext();
  try {
    const { page, release, sent, answered } = await heldPage(context);
    await page.evaluate((u) => {
      window.ended = [];
      const end = (r) => window.ended.push(`${r.error?.name} ${r.error?.phase}`);
      // A 503 (its body unread), then its deadline while it waits for the engine.
      window.call(`${u}/fail-first?key=boot-late-503&n=5`, { deadlineMs: 1500 }).then(end);
      // An attempt that times out, then its deadline.
      window.call(`${u}/hang?id=boot-late-hang`, { timeoutMs: 300, deadlineMs: 1500 }).then(end);
      // One the boot build does not send (an option of the engine's): none goes.
      window.call(`${u}/echo?id=boot-late-waits`, { deadlineMs: 1500, retry: { maxAttempts: 2 } }).then(end);
    }, servers.fault);
    await answered(503, 'boot-late-503');
    await page.waitForFunction(() => window.ended.length === 3, null, { timeout: 10000 });
    assert.deepEqual(await page.evaluate(() => window.ended.sort()), Array(3).fill('TimeoutError deadline'));
    release();
    await page.evaluate(() => window.api.ready.then(() => undefined));
    await page.waitForFunction(() => window.api.stats().requests === 3);
    const stats = await page.evaluate(() => window.api.stats());
    // Each a request and a failure; the boot build's attempts are its attempts as they ended (the 503's
    // status and the timeout are breaker samples), and no retry goes: the deadline has passed.
    assert.deepEqual(
      [stats.requests, stats.attempts, stats.retries, stats.timeouts, stats.failures, stats.inFlight, stats.queued],
      [3, 2, 0, 1, 3, 0, 0],
    );
    assert.deepEqual(await page.evaluate(() => window.events), ['attempt 1', 'attempt 1']);
    assert.deepEqual(await page.evaluate(() => window.api.breakers().map((b) => b.samples)), [1, 1]);
    assert.equal(sent('boot-late-'), 2, 'nothing sent again');
  } finally {
    await context.close();
  }
});
