// Cross-tab coordination: two pages of one origin in one browser context,
// each with its own client. A breaker opened in one tab rejects at once in
// the other, with no network; one half-open probe across both, whose
// outcome the other tab's calls wait for (the half-open hold, README,
// "breaker.halfOpenProbes"); a Retry-After or a spent rate-limit quota seen by one tab
// holds the other back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser, a, b, errors;
before(async () => {
  servers = await startServers();
  browser = await launchChromium();
  const context = await browser.newContext();
  [a, b] = [await context.newPage(), await context.newPage()];
  errors = [...watchErrors(a), ...watchErrors(b)];
  for (const page of [a, b]) {
    await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
    await page.waitForFunction(() => window.ready === true);
    await page.evaluate(async () => {
      window.client = await window.stormguard.createClient({
        retry: false, breaker: { minSamples: 2, openMs: 1500 },
      });
      window.heard = [];
      new BroadcastChannel('stormguard-tabs:stormguard:').onmessage = (e) => window.heard.push(e.data);
    });
  }
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

const probeLog = async (id) =>
  (await (await fetch(`${servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight);
const arrivals = async (id) => (await probeLog(id)).length;
/** `end`: when the call settled, in wall-clock time (Date.now(), the clock the tabs and the test share). */
const call = (page, path, options = {}) => page.evaluate(async ([url, options]) => {
  const started = performance.now();
  try {
    await window.client.request(url, options);
    return { ok: true, ms: performance.now() - started, end: Date.now() };
  } catch (e) {
    return { ok: false, name: e.name, retryInMs: e.retryInMs, ms: performance.now() - started, end: Date.now() };
  }
}, [`${servers.fault}${path}`, options]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Resolves once `id` has `n` requests in the fault server's log: a probe is out (it took the probe lock first). */
async function arrived(id, n = 1) {
  for (let i = 0; i < 500; i++) {
    const log = await probeLog(id);
    if (log.length >= n) return log;
    await sleep(10);
  }
  throw new Error(`${id}: fewer than ${n} requests arrived`);
}
/** Resolves once `page`'s client has `key` in state `state` (news from the other tab take a moment). */
const breakerIs = (page, key, state) =>
  page.waitForFunction(([key, state]) => window.client.breakers().some((s) => s.key === key && s.state === state), [key, state]);
/**
 * Resolves once `page` has heard a message of type `t` from the other tab: its client, whose channel was made
 * before this listener's, has then had it too (a channel's messages reach its listeners in creation order).
 */
const heard = (page, t) => page.waitForFunction((t) => window.heard.some((m) => m.t === t), t);

test('a breaker opened in one tab rejects in the other without network; one probe across both, the other tab waits for it', async () => {
  await call(a, '/status/503?id=xt-a', { breakerKey: 'svc' });
  const opening = Date.now();
  await call(a, '/status/503?id=xt-a', { breakerKey: 'svc' });
  assert.equal(await a.evaluate(() => window.client.breakers()[0].state), 'open');
  await breakerIs(b, 'svc', 'open');
  const rejected = await call(b, '/echo?id=xt-b', { breakerKey: 'svc' });
  assert.equal(rejected.name, 'CircuitOpenError');
  // What is left of a's 1500 ms open period (opened after `opening`): however long the news took.
  const since = rejected.end - opening;
  assert.ok(rejected.retryInMs <= 1500 && rejected.retryInMs >= 1500 - since - 5, `retryInMs ${rejected.retryInMs}, ${since} ms after the open`);
  assert.equal(await arrivals('xt-b'), 0, 'the other tab sent nothing');

  await new Promise((r) => setTimeout(r, 1600));
  const [pa, pb] = await Promise.all([
    call(a, '/delay?ms=400&id=xt-probe&tab=a', { breakerKey: 'svc' }),
    call(b, '/delay?ms=400&id=xt-probe&tab=b', { breakerKey: 'svc' }),
  ]);
  // One probe across both tabs; the other tab's call waited for its success
  // (README, "breaker.halfOpenProbes"; it was rejected with CircuitOpenError before).
  assert.deepEqual([pa.ok, pb.ok], [true, true], JSON.stringify([pa, pb]));
  const log = await probeLog('xt-probe');
  assert.equal(log.length, 2);
  assert.ok(log[1].t >= log[0].finishedAt, 'the second call was sent after the probe had its answer');

  // The good probe closed the breaker in both tabs.
  for (const page of [a, b]) await breakerIs(page, 'svc', 'closed');
  assert.equal((await call(b, '/echo?id=xt-after', { breakerKey: 'svc' })).ok, true);
});

test('a failed probe in one tab rejects the calls waiting in the other without sending', async () => {
  for (let i = 0; i < 2; i++) await call(a, '/status/503?id=xt-f-open', { breakerKey: 'fail' });
  await breakerIs(b, 'fail', 'open');
  await sleep(1600);
  const probe = call(a, '/delay?ms=600&status=503&id=xt-fail&tab=a', { breakerKey: 'fail' });
  const [sent] = await arrived('xt-fail');
  const [pa, pb] = await Promise.all([probe, call(b, '/echo?id=xt-fail&tab=b', { breakerKey: 'fail' })]);
  assert.equal(pa.name, 'HttpError', 'the probe failed');
  assert.equal(pb.name, 'CircuitOpenError', JSON.stringify(pb));
  assert.ok(pb.retryInMs > 0, `retryInMs ${pb.retryInMs}`);
  // The probe was answered 600 ms after it arrived: b, made after it arrived, settled no sooner.
  const answered = servers.faultWall(sent.t) + 600;
  assert.ok(pb.end >= answered - 5, `rejected ${answered - pb.end} ms before the probe's answer: it did not wait for it`);
  assert.deepEqual((await probeLog('xt-fail')).map((e) => e.query.tab), ['a'], 'the waiting tab sent nothing');
});

test('a call waiting for another tab\'s probe ends at its deadline and on abort, sending nothing', async () => {
  for (let i = 0; i < 2; i++) await call(a, '/status/503?id=xt-e-open', { breakerKey: 'end' });
  await breakerIs(b, 'end', 'open');
  await sleep(1600);
  const probe = call(a, '/delay?ms=1500&id=xt-end&tab=a', { breakerKey: 'end' });
  await arrived('xt-end');
  const timed = await call(b, '/echo?id=xt-end&tab=b', { breakerKey: 'end', deadlineMs: 300 });
  assert.equal(timed.name, 'TimeoutError', JSON.stringify(timed));
  assert.ok(timed.ms < 1000, `deadline settled after ${timed.ms} ms`);
  const aborted = await b.evaluate(async (url) => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort('gone'), 200);
    const t0 = performance.now();
    try {
      await window.client.request(url, { breakerKey: 'end', signal: ctl.signal });
      return { ok: true };
    } catch (e) {
      return { name: e.name, reason: e.reason, ms: performance.now() - t0 };
    }
  }, `${servers.fault}/echo?id=xt-end&tab=b`);
  assert.equal(aborted.name, 'AbortError', JSON.stringify(aborted));
  assert.ok(aborted.ms < 1000, `abort settled after ${aborted.ms} ms`);
  assert.equal((await probe).ok, true);
  assert.deepEqual((await probeLog('xt-end')).map((e) => e.query.tab), ['a'], 'the waiting tab sent nothing');
  assert.deepEqual(errors, []);
});

test('a Retry-After cooldown received by one tab holds the other back', async () => {
  await b.evaluate(() => { window.heard.length = 0; });
  await call(a, '/status/503?retryAfter=2&id=xt-ra', { breakerKey: 'ra' });
  await heard(b, 'cooldown');
  const short = await call(b, '/echo?id=xt-ra-b', { breakerKey: 'ra', deadlineMs: 1000 });
  assert.equal(short.name, 'CircuitOpenError', 'a cooldown beyond the deadline fails at once');
  assert.ok(short.ms < 100);
  assert.equal(await arrivals('xt-ra-b'), 0);
  const waited = await call(b, '/echo?id=xt-ra-b', { breakerKey: 'ra', deadlineMs: 5000 });
  assert.equal(waited.ok, true);
  // Retry-After: 2 from the 503, answered after it arrived: b's call went no sooner.
  const [refused] = await probeLog('xt-ra');
  const [went] = await probeLog('xt-ra-b');
  assert.ok(went.t - refused.t >= 1995, `went ${Math.round(went.t - refused.t)} ms after the 503`);
  assert.deepEqual(errors, []);
});

test('a spent rate-limit quota seen by one tab holds the other until the reset', async () => {
  const path = '/ratelimit?quota=1&window=2&form=ietf&id=xt-rl';
  await b.evaluate(() => { window.heard.length = 0; });
  assert.equal((await call(a, path, { breakerKey: 'rl' })).ok, true);
  await heard(b, 'cooldown');
  const short = await call(b, path, { breakerKey: 'rl', deadlineMs: 500 });
  assert.equal(short.name, 'CircuitOpenError', 'a hold beyond the deadline fails at once');
  assert.ok(short.ms < 100 && short.retryInMs > 500, JSON.stringify(short));
  // A call that ignores rate limits is not held by it.
  const ignoring = await call(b, path, { breakerKey: 'rl', rateLimit: false });
  assert.equal(ignoring.name, 'HttpError');
  const waited = await call(b, path, { breakerKey: 'rl', deadlineMs: 5000 });
  assert.equal(waited.ok, true, JSON.stringify(waited));
  const log = (await (await fetch(`${servers.fault}/_log?id=xt-rl`)).json()).filter((e) => !e.preflight);
  assert.deepEqual(log.map((e) => e.status), [200, 429, 200], 'only the call that ignored the quota was refused');
  assert.deepEqual(errors, []);
});

test('a cooldown told to the other tab binds only the calls sent with the same credentials', async () => {
  const as = (key, extra = {}) => ({ breakerKey: 'who', headers: { 'X-API-Key': key }, ...extra });
  await b.evaluate(() => { window.heard.length = 0; });
  await call(a, '/status/503?retryAfter=2&id=xt-who', as('mallory'));
  await heard(b, 'cooldown');
  const bob = await call(b, '/echo?id=xt-who-bob', as('bob', { deadlineMs: 1000 }));
  assert.equal(bob.ok, true, `bob was held by mallory's cooldown: ${JSON.stringify(bob)}`);
  assert.ok(bob.ms < 500, `bob waited ${bob.ms} ms`);
  const anonymous = await call(b, '/echo?id=xt-who-anon', { breakerKey: 'who', deadlineMs: 1000 });
  assert.equal(anonymous.ok, true, JSON.stringify(anonymous));
  const mallory = await call(b, '/echo?id=xt-who-m', as('mallory', { deadlineMs: 1000 }));
  assert.equal(mallory.name, 'CircuitOpenError', 'her own calls in the other tab are held');
  assert.equal(await arrivals('xt-who-m'), 0);
  assert.deepEqual(errors, []);
});
