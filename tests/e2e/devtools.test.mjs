// stormguard/devtools (issue 41, item 3) in Chromium: the panel mounted on a
// client in a page, an outage driven against the fault server, and the
// panel's state read from the DOM: the breaker open with its time to the
// next probe, the failed calls with their attempts and decisions, a call
// refused by the open breaker, a Retry-After hold, the queue, and unmount.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser, page, errors;
const RUN = Date.now().toString(36);

before(async () => {
  servers = await startServers();
  browser = await launchChromium();
  page = await browser.newPage();
  errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  await page.waitForFunction(() => window.ready === true);
  await page.evaluate(async (fault) => {
    window.fault = fault;
    const { mountDevtools } = await import('/pkg/devtools.js');
    window.mountDevtools = mountDevtools;
    window.box = document.body.appendChild(document.createElement('div'));
    window.client = await window.stormguard.createClient({
      crossTab: false,
      retry: { maxAttempts: 2, baseDelayMs: 20, jitter: 'none' },
      breaker: { consecutiveFailures: 3, openMs: 5000, maxOpenMs: 5000 },
      concurrency: { max: 1, queue: 5 },
      budget: false,
    });
    window.box.id = 'box';
    window.unmount = mountDevtools(window.client, window.box, { budget: false });
    window.settle = (p) => p.then((v) => ({ ok: true, v }), (e) => ({
      ok: false, name: e.name, status: e.status, attempts: e.attempts, retryDenied: e.retryDenied,
    }));
  }, servers.fault);
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

const attr = (sel, name) => page.getAttribute(sel, name);

test('nothing is drawn before a call: empty sections', async () => {
  assert.equal(await page.locator('[data-sg-devtools]').count(), 1);
  assert.equal(await page.locator('[data-sg-breaker]').count(), 0);
  assert.equal(await page.textContent('[data-sg-stat=requests]'), 'requests 0');
});

test('an outage: failed calls with their attempts, the breaker open with its time to the next probe, then a refusal', async () => {
  const url = `${servers.fault}/status/503?id=devtools-${RUN}`;
  const results = await page.evaluate(async (u) => {
    const out = [];
    for (let i = 0; i < 2; i++) out.push(await window.settle(window.client.request(u)));
    return out;
  }, url);
  assert.deepEqual(results.map((r) => [r.name, r.attempts]), [['HttpError', 2], ['CircuitOpenError', 1]],
    'the first call failed twice; the third failure in a row opened the breaker, so the second call was refused at its retry');
  const key = `GET ${servers.fault}/status/503`;
  const breaker = `[data-sg-breaker="${key}"]`;
  await page.waitForSelector(`${breaker}[data-state=open]`, { timeout: 5000 });
  const nextProbe = Number(await attr(`${breaker} [data-sg-next-probe]`, 'data-sg-next-probe'));
  assert.ok(nextProbe > 0 && nextProbe <= 5000, `time to the next probe: ${nextProbe}`);
  assert.match(await page.textContent(breaker), /probe in (\d+\.\d s|\d+ ms)/);

  const refused = await page.evaluate((u) => window.settle(window.client.request(u)), url);
  assert.equal(refused.name, 'CircuitOpenError');
  await page.waitForFunction(() => document.querySelectorAll('[data-sg-call]').length === 3);
  const rows = await page.$$eval('[data-sg-call]', (els) => els.map((e) => ({
    outcome: e.dataset.outcome, attempts: Number(e.dataset.attempts), text: e.textContent,
  })));
  // Newest first: the refused call (nothing sent), the call refused at its retry, the call that failed twice.
  assert.deepEqual(rows.map((r) => [r.outcome, r.attempts]), [['failed', 0], ['failed', 1], ['failed', 2]]);
  assert.match(rows[2].text, /^GET \S+failed#1 sent · #1 503 → retry in 20 ms · #2 sent · gave up: 503$/);
  assert.match(rows[0].text, /gave up: CircuitOpenError/);
  assert.equal(await page.textContent('[data-sg-stat=attempts]'), 'attempts 3');
});

test('a Retry-After hold shows with its reason while it lasts', async () => {
  const url = `${servers.fault}/status/429?retryAfter=2&id=hold-${RUN}`;
  await page.evaluate((u) => {
    window.held = window.settle(window.client.request(u, { retry: false }));
  }, url);
  await page.evaluate(() => window.held);
  // A second call to the same key, whose deadline outlasts the hold, waits for it: a 'wait' event,
  // shown as a hold. (One whose deadline it would pass is refused at once.)
  await page.evaluate((u) => {
    window.waiting = window.settle(window.client.request(u, { retry: false, deadlineMs: 5000 }));
  }, url);
  await page.waitForSelector('[data-sg-hold][data-reason=retryAfter]', { timeout: 5000 });
  assert.equal(await attr('[data-sg-hold]', 'data-sg-hold'), `GET ${servers.fault}/status/429`);
  assert.match(await page.textContent('[data-sg-hold]'), /retryAfter([12]\.\d s|\d+ ms) left/);
  await page.evaluate(() => window.waiting);
  await page.waitForSelector('[data-sg-hold]', { state: 'detached', timeout: 5000 });
});

test('the queue: a call waiting for the one slot shows as queued', async () => {
  await page.evaluate((f) => {
    window.ctrl = new AbortController();
    window.hang1 = window.settle(window.client.request(`${f}/hang?id=q1`, { signal: window.ctrl.signal }));
    window.hang2 = window.settle(window.client.request(`${f}/hang?id=q2`, { signal: window.ctrl.signal }));
  }, servers.fault);
  await page.waitForFunction(() => document.querySelector('[data-sg-stat=queued]')?.textContent === 'queued 1'
    && document.querySelector('[data-sg-stat=inFlight]')?.textContent === 'inFlight 1', null, { timeout: 5000 });
  await page.evaluate(() => { window.ctrl.abort(); return Promise.all([window.hang1, window.hang2]); });
  await page.waitForFunction(() => document.querySelector('[data-sg-stat=queued]')?.textContent === 'queued 0'
    && document.querySelector('[data-sg-stat=inFlight]')?.textContent === 'inFlight 0', null, { timeout: 5000 });
});

test('the retry budget during an outage: retries used climb to what the calls allow, then the next is denied', async () => {
  // A client with a budget (the first has none): 2 retries plus 0.1 per call in a minute's window.
  const budget = { ratio: 0.1, minRetries: 2, windowMs: 60000 };
  await page.evaluate(async (b) => {
    window.budgeted = await window.stormguard.createClient({
      crossTab: false, retry: { maxAttempts: 2, baseDelayMs: 10, jitter: 'none' }, breaker: false, budget: b,
    });
    window.box2 = document.body.appendChild(document.createElement('div'));
    window.box2.id = 'box2';
    window.unmount2 = window.mountDevtools(window.budgeted, window.box2, { budget: b });
  }, budget);
  const read = () => page.$eval('#box [data-sg-budget]', (e) => ({
    state: e.dataset.sgBudget, used: Number(e.dataset.used), allowed: Number(e.dataset.allowed), calls: Number(e.dataset.calls),
  }));
  // One evaluate: $eval finds the element and then reads it in a second step, and the panel's
  // render (every 250 ms) can replace it in between, leaving it with no panel around it.
  const readBox2 = () => page.evaluate(() => {
    const e = document.querySelector('#box2 [data-sg-budget]');
    return {
      state: e.dataset.sgBudget, used: Number(e.dataset.used), allowed: Number(e.dataset.allowed), calls: Number(e.dataset.calls),
      text: e.textContent, denied: e.closest('[data-sg-devtools]').querySelector('[data-sg-stat=budgetDenied]').textContent,
    };
  });
  assert.equal((await read()).state, 'off', 'the first panel: its client has no budget (budget: false)');
  assert.deepEqual(await readBox2().then(({ text, denied, ...r }) => r), { state: 'open', used: 0, allowed: 2, calls: 0 });
  const call = (i) => page.evaluate((u) => window.settle(window.budgeted.request(u)), `${servers.fault}/status/503?id=budget-${RUN}-${i}`);
  const wait = (want) => page.waitForFunction((w) => {
    const e = document.querySelector('#box2 [data-sg-budget]');
    return e && e.dataset.used === String(w.used) && e.dataset.calls === String(w.calls);
  }, want, { timeout: 5000 });

  assert.deepEqual(await call(1).then((r) => [r.name, r.attempts]), ['HttpError', 2]);
  await wait({ used: 1, calls: 1 });
  assert.deepEqual(await readBox2().then(({ text, denied, ...r }) => r), { state: 'open', used: 1, allowed: 2, calls: 1 });
  assert.match((await readBox2()).text, /^budget ≈ 1 \/ 2 retries used in 60\.0 s \(1 calls\)$/);

  assert.deepEqual(await call(2).then((r) => [r.name, r.attempts]), ['HttpError', 2]);
  await wait({ used: 2, calls: 2 });
  // 3 retries would pass 2 + 0.1 × 2: the panel says the next one is denied before it is.
  const spent = await readBox2();
  assert.deepEqual([spent.state, spent.used, spent.allowed, spent.denied], ['spent', 2, 2, 'budgetDenied 0']);
  assert.match(spent.text, /next retry denied$/);

  const denied = await call(3);
  assert.deepEqual([denied.name, denied.attempts, denied.retryDenied], ['HttpError', 1, 'budget']);
  await wait({ used: 2, calls: 3 });
  const after = await readBox2();
  assert.deepEqual([after.state, after.used, after.allowed, after.denied], ['spent', 2, 2, 'budgetDenied 1']);
  await page.evaluate(() => { window.unmount2(); window.box2.remove(); });
});

test('unmount removes the panel; with no element it floats on the body', async () => {
  await page.evaluate(() => window.unmount());
  assert.equal(await page.locator('[data-sg-devtools]').count(), 0);
  const floating = await page.evaluate(() => {
    const off = window.mountDevtools(window.client);
    const panel = document.querySelector('[data-sg-devtools]');
    const r = { parent: panel.parentElement === document.body, float: panel.classList.contains('sg-float') };
    off();
    off();
    return { ...r, left: document.querySelectorAll('[data-sg-devtools]').length };
  });
  assert.deepEqual(floating, { parent: true, float: true, left: 0 });
  // The browser's own line for each failed status is no error of the page.
  assert.deepEqual(errors.filter((e) => !/Failed to load resource: the server responded with a status of (503|429)/.test(e)), []);
});
