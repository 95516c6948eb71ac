// retry.retryOn (README, "retry.retryOn"; ky's shouldRetry): asked after each
// failed attempt a retry could follow; true retries a status the policy would
// not (never a keyless POST), false stops one it would (retryDenied
// 'predicate'), undefined leaves it to the policy. A throw ends the call with
// OptionsError('retry.retryOn'); an abort while it is pending ends the call.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, OptionsError, AbortError } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

const seen = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).length;
const settled = (p) => p.then((value) => ({ ok: true, value }), (e) => e);
const BASE = { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 3 }, breaker: false, budget: false, crossTab: false };

test('true retries a 404 up to maxAttempts; the info names the attempt and its error', async () => {
  const infos = [];
  const client = await createClient({ ...BASE, retry: { ...BASE.retry, retryOn: (info) => (infos.push(info), true) } });
  const e = await settled(client.request(`${server.url}/status/404?id=ro-404`));
  assert.equal(e.name, 'HttpError');
  assert.equal(e.status, 404);
  // not asked after the last attempt: the policy's own word on a 404
  assert.equal(e.retryDenied, 'status');
  assert.equal(await seen('ro-404'), 3);
  assert.deepEqual(infos.map((i) => [i.attempt, i.method, i.error.status]), [[1, 'GET', 404], [2, 'GET', 404]]);
  // a call's own wins over the client's; undefined keeps the default (a 404 is final)
  const own = await settled(client.request(`${server.url}/status/404?id=ro-404-own`, { retry: { retryOn: () => undefined } }));
  assert.equal(own.retryDenied, 'status');
  assert.equal(await seen('ro-404-own'), 1);
  // extend() inherits it, and fetch() asks it too
  const child = client.extend({ headers: { 'x-a': '1' } });
  const r = await child.fetch(`${server.url}/status/404?id=ro-404-fetch`);
  assert.equal(r.status, 404);
  assert.equal(await seen('ro-404-fetch'), 3);
  client.close();
});

test('false stops a 503 (retryDenied predicate, one attempt); undefined keeps the default', async () => {
  const client = await createClient(BASE);
  const e = await settled(client.request(`${server.url}/status/503?id=ro-503`, { retry: { retryOn: async () => false } }));
  assert.equal(e.status, 503);
  assert.equal(e.retryDenied, 'predicate');
  assert.equal(await seen('ro-503'), 1);
  const d = await settled(client.request(`${server.url}/status/503?id=ro-503-u`, { retry: { retryOn: () => undefined } }));
  assert.equal(d.retryDenied, 'attempts');
  assert.equal(await seen('ro-503-u'), 3);
  client.close();
});

test('true never retries a POST without an idempotency key (never even asked)', async () => {
  let asked = 0;
  const client = await createClient({ ...BASE, retry: { ...BASE.retry, retryOn: () => (asked++, true) } });
  const e = await settled(client.request(`${server.url}/status/503?id=ro-post`, { method: 'POST', body: {} }));
  assert.equal(e.retryDenied, 'method');
  assert.equal(await seen('ro-post'), 1);
  assert.equal(asked, 0);
  client.close();
});

test('a throwing or rejecting predicate ends the call with OptionsError(retry.retryOn), cause what it threw', async () => {
  const client = await createClient(BASE);
  const boom = new Error('boom');
  for (const [id, retryOn] of [['ro-throw', () => { throw boom; }], ['ro-reject', async () => { throw boom; }]]) {
    const e = await settled(client.request(`${server.url}/status/503?id=${id}`, { retry: { retryOn } }));
    assert.ok(e instanceof OptionsError, String(e));
    assert.equal(e.option, 'retry.retryOn');
    assert.equal(e.cause, boom);
    assert.equal(await seen(id), 1);
  }
  client.close();
});

test('not a function is an OptionsError naming retry.retryOn, on the client, a call and extend()', async () => {
  await assert.rejects(createClient({ retry: { retryOn: true } }), (e) => e instanceof OptionsError && e.option === 'retry.retryOn');
  const client = await createClient(BASE);
  await assert.rejects(client.request(`${server.url}/echo`, { retry: { retryOn: 'yes' } }), (e) => e instanceof OptionsError && e.option === 'retry.retryOn');
  assert.throws(() => client.extend({ retry: { retryOn: {} } }), (e) => e instanceof OptionsError && e.option === 'retry.retryOn');
  client.close();
});

test('an abort while the predicate is pending ends the call with an AbortError, no retry', async () => {
  const client = await createClient(BASE);
  const ctl = new AbortController();
  let asked;
  const pending = new Promise((resolve) => { asked = resolve; });
  const call = settled(client.request(`${server.url}/status/503?id=ro-abort`, {
    signal: ctl.signal,
    retry: { retryOn: () => { asked(); return new Promise(() => {}); } },
  }));
  await pending;
  ctl.abort();
  const e = await call;
  assert.ok(e instanceof AbortError, String(e));
  assert.equal(await seen('ro-abort'), 1);
  client.close();
});
