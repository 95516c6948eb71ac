// Hedges keep to their caps (README, "hedge"), through the
// package's Node build against the fault server, counting the requests that
// arrive: `max` counts over the whole call, hedges count toward
// `retry.maxAttempts`, and a leg refused with 429/503 + Retry-After stops
// further hedges and holds every call of the key. Issue 27 item 4.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, CircuitOpenError } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

const realFetch = globalThis.fetch;
const log = async (id) => (await (await realFetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('maxAttempts 3 with hedge { afterMs: 50, max: 1 } against a backend that never answers: 3 requests, 1 hedge', async () => {
  const client = await createClient({ crossTab: false, budget: false, breaker: false });
  const id = 'i27-hedge-caps';
  const attempts = [];
  client.on('attempt', (e) => attempts.push(e));
  const e = await client.request(`${server.url}/hang?id=${id}`, {
    timeoutMs: 300, deadlineMs: 10000,
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 },
    hedge: { afterMs: 50, max: 1 },
  }).catch((x) => x);
  assert.equal(e.name, 'TimeoutError');
  assert.equal(e.retryDenied, 'attempts');
  await sleep(100); // the last aborted request's log entry
  const sent = await log(id);
  assert.equal(sent.length, 3, `${sent.length} requests arrived (before: 4, every round hedged)`);
  assert.deepEqual(attempts.map((a) => a.attempt), [1, 2, 3]);
  assert.equal(client.stats().attempts, 3);
  // Round 1: the attempt and its hedge 50 ms later; round 2: the retry
  // alone (the hedge count and maxAttempts are both spent).
  const [, hedge, retry] = attempts.map((a) => a.elapsedMs);
  assert.ok(hedge >= 45 && hedge < 300, `the hedge went out at ${hedge} ms`);
  assert.ok(retry >= 300, `the third request is the retry after the round timed out (at ${retry} ms)`);
  client.close();
});

test('hedge max over the whole call: max 2 with maxAttempts 10 sends 2 hedges in all, not 2 per round', async () => {
  const client = await createClient({ crossTab: false, budget: false, breaker: false });
  const id = 'i27-hedge-max';
  const e = await client.request(`${server.url}/hang?id=${id}`, {
    timeoutMs: 250, deadlineMs: 1400,
    retry: { maxAttempts: 10, baseDelayMs: 10, maxDelayMs: 20 },
    hedge: { afterMs: 50, max: 2 },
  }).catch((x) => x);
  assert.equal(e.name, 'TimeoutError');
  await sleep(100);
  const sent = await log(id);
  // Rounds of 250 ms (and a 0-20 ms backoff) within 1400 ms: at least 3, at
  // most 6 (7 x 250 > 1400); 3 requests in round 1 and 1 per later round, so
  // requests = rounds + 2. Hedging every round (the defect) sends 3 a round.
  const rounds = sent.length - 2;
  assert.ok(rounds >= 3 && rounds <= 6, `${sent.length} requests: ${rounds} rounds`);
  client.close();
});

test('a hedge leg answered 429 Retry-After: 10 stops further hedges and holds the key for every call', async (t) => {
  const id = 'i27-hedge-429';
  // A stand-in for the global fetch sends the attempt to /hang and the
  // hedge to a 429; the breaker key is the call's URL, the same for both.
  let sent = 0;
  const client = await createClient({
    crossTab: false, budget: false, breaker: false,
    retry: { maxAttempts: 10, maxRetryAfterMs: 30000 },
  });
  globalThis.fetch = (input, init) => {
    sent++;
    const path = sent === 2 ? '/status/429?retryAfter=10&' : '/hang?';
    return realFetch(`${server.url}${path}id=${id}`, { signal: init?.signal ?? input.signal });
  };
  t.after(() => { globalThis.fetch = realFetch; });
  const url = `${server.url}/api/items`;
  // Hedges every 300 ms: the 429 (answered at once) is read long before the
  // next one would be due.
  const first = client.request(url, { timeoutMs: 5000, deadlineMs: 30000, hedge: { afterMs: 300, max: 5 } }).catch((x) => x);
  for (let i = 0; i < 200 && (await log(id)).length < 2; i++) await sleep(10);
  await sleep(700);
  assert.equal(sent, 2, `${sent} requests went out: no hedge after the 429`);
  // Another call of the key (another query: not joined to the first by
  // dedupe) is held; its deadline is shorter than the hold.
  const other = await client.request(`${url}?other=1`, { deadlineMs: 2000 }).catch((x) => x);
  assert.ok(other instanceof CircuitOpenError, `the other call: ${other?.name}`);
  assert.ok(other.retryInMs > 9000 && other.retryInMs <= 10000, `retryInMs ${other.retryInMs}`);
  assert.equal(sent, 2, 'the other call sent nothing');
  client.close();
  await first;
  globalThis.fetch = realFetch;
  assert.equal((await log(id)).length, 2);
});
