// Exactly-once survives hooks and header functions (issue 37, rows 2 and 4;
// README, "idempotencyKey"): a keyed POST to the fault server's `/drop`
// (its idempotency store executes a key once, and kills the connection
// without answering) is retried only while the Idempotency-Key as sent is
// the call's own, the same on every attempt.
//   - the call's `idempotencyKey` wins over one a client `headers` function
//     gives (a fresh UUID "per request"), on every attempt;
//   - a `beforeRequest` hook that rebuilds the headers without the key (a
//     signing hook), blanks it or changes it: that attempt's failure is final.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

const log = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).map((e) => e.idempotencyKey);
const executions = async (id) => (await (await fetch(`${server.url}/_executions?id=${id}`)).json()).executions;
const settled = (p) => p.then((value) => ({ ok: true, value }), (e) => ({ ok: false, name: e.name, retryDenied: e.retryDenied }));
const RETRY = { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 3 }, breaker: false, budget: false, crossTab: false };

test("the call's idempotencyKey wins over a headers function's Idempotency-Key, on every attempt", async () => {
  let given = 0;
  const client = await createClient({
    ...RETRY,
    headers: () => ({ 'Idempotency-Key': `fresh-${++given}`, 'x-trace': String(given) }),
  });
  for (const [how, send] of [
    ['request()', (url) => client.request(url, { method: 'POST', body: { sku: 'a1' }, idempotencyKey: 'order-42' })],
    ['fetch()', (url) => client.fetch(url, { method: 'POST', body: '{}', idempotencyKey: 'order-43' }).then((r) => r.json())],
  ]) {
    const id = `i37-header-fn-${how.replace(/\W/g, '')}`;
    const r = await settled(send(`${server.url}/drop?id=${id}`));
    const key = how === 'fetch()' ? 'order-43' : 'order-42';
    assert.equal(r.ok, true, `${how}: ${JSON.stringify(r)}`);
    assert.equal(r.value.replay, true, `${how}: the retry was answered from the key's stored result`);
    assert.deepEqual(await log(id), [key, key], `${how}: the call's key on both attempts`);
    assert.equal(await executions(id), 1, `${how}: one execution`);
  }
  assert.ok(given >= 4, 'the headers function ran before each attempt');
  client.close();
});

test('a keyed POST whose beforeRequest hook sends it without its key, blank, or with another: that failure is final', async () => {
  const cases = [
    // A signing hook that rebuilds the headers without Idempotency-Key.
    ['rebuilt', (request) => new Request(request, { headers: { 'content-type': 'application/json', 'x-signature': 'sig' } }), [null]],
    ['blank', (request) => { request.headers.set('Idempotency-Key', '   '); }, ['']],
    // A fresh key per attempt: the first may be retried (it is the attempt's
    // own), the second differs from the first: final.
    ['fresh', (request, info) => { request.headers.set('Idempotency-Key', `k-${info.attempt}`); }, ['k-1', 'k-2']],
    // Only from the retry on: the first keeps order-7, the retry sends none.
    ['dropped on retry', (request, info) => { if (info.attempt > 1) request.headers.delete('Idempotency-Key'); }, ['order-7', null]],
  ];
  for (const [how, hook, keys] of cases) {
    const client = await createClient({ ...RETRY, hooks: { beforeRequest: hook } });
    const id = `i37-hook-${how.replace(/\W/g, '')}`;
    const r = await settled(client.request(`${server.url}/drop?id=${id}`, { method: 'POST', body: { sku: 'a1' }, idempotencyKey: 'order-7' }));
    assert.deepEqual([r.ok, r.name, r.retryDenied], [false, 'NetworkError', 'method'], `${how}: ${JSON.stringify(r)}`);
    assert.deepEqual(await log(id), keys, `${how}: the keys as sent`);
    assert.equal(await executions(id), keys.length, `${how}: one execution per request sent, none more`);
    client.close();
  }
  // A hook that keeps the key (it signs in place): retried, executed once.
  const signing = await createClient({ ...RETRY, hooks: { beforeRequest: (request) => { request.headers.set('x-signature', 'sig'); } } });
  const r = await settled(signing.request(`${server.url}/drop?id=i37-hook-kept`, { method: 'POST', body: {}, idempotencyKey: 'order-8' }));
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.deepEqual(await log('i37-hook-kept'), ['order-8', 'order-8']);
  assert.equal(await executions('i37-hook-kept'), 1);
  signing.close();
});
