// Exactly-once survives hooks and header functions (issue 37, row 2; API.md,
// "Revised 2026-12-07"): a keyed POST to the fault server's `/drop` (its
// idempotency store executes a key once, and kills the connection without
// answering) sends the call's own key on every attempt, over one a client
// `headers` function gives (a fresh UUID "per request").
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
