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
  const events = [];
  for (const type of ['attempt', 'timeout', 'retry', 'giveUp']) {
    client.on(type, (e) => { events.push(`${type} ${e.attempt}`); if (type === 'attempt') attempts.push(e); });
  }
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
  // Round 1: the attempt and its hedge 50 ms later, before the round timed
  // out; round 2: the retry alone (the hedge count and maxAttempts are both
  // spent). The order of the events says it, however late a busy machine
  // runs the timers.
  assert.deepEqual(events, ['attempt 1', 'attempt 2', 'timeout 2', 'retry 2', 'attempt 3', 'timeout 3', 'giveUp 3']);
  const [, hedge, retry] = attempts.map((a) => a.elapsedMs);
  assert.ok(hedge >= 45, `the hedge went out at ${hedge} ms, before its afterMs`);
  assert.ok(retry >= 300, `the third request is the retry after the round timed out (at ${retry} ms)`);
  client.close();
});

test('hedge max over the whole call: max 2 with maxAttempts 10 sends 2 hedges in all, not 2 per round', async () => {
  const client = await createClient({ crossTab: false, budget: false, breaker: false });
  const id = 'i27-hedge-max';
  let retries = 0;
  client.on('retry', () => { retries++; });
  // The call ends when its 10 attempts are spent, not at a deadline: how many
  // rounds fit in a time depends on how busy the machine is (the fresh-clone
  // CI once saw 6 in 1400 ms, a loaded one could see 2).
  const e = await client.request(`${server.url}/hang?id=${id}`, {
    timeoutMs: 250, deadlineMs: 60000,
    retry: { maxAttempts: 10, baseDelayMs: 10, maxDelayMs: 20 },
    hedge: { afterMs: 50, max: 2 },
  }).catch((x) => x);
  assert.equal(e.name, 'TimeoutError');
  assert.equal(e.retryDenied, 'attempts');
  await sleep(100);
  const sent = await log(id);
  assert.equal(sent.length, 10, `${sent.length} requests arrived`);
  // A round is the first attempt or a retry after a round timed out; every
  // other request is a hedge. Hedging every round (the defect) sends 3
  // requests a round: 4 rounds and 6 hedges.
  const rounds = 1 + retries;
  assert.equal(sent.length - rounds, 2, `${rounds} rounds: ${sent.length - rounds} hedges`);
  client.close();
});

test('a hedge leg answered 429 Retry-After: 10 stops further hedges and holds the key for every call', async (t) => {
  const id = 'i27-hedge-429';
  // A stand-in for the global fetch sends the attempt to /hang and the
  // hedge to a 429; the breaker key is the call's URL, the same for both.
  // It notes when the client first reads the 429's status, and for each
  // request whether that was before it went out.
  let sent = 0;
  let readAt = null;
  const afterRead = [];
  class Noted extends Response {
    get status() {
      readAt ??= performance.now();
      return super.status;
    }
  }
  const client = await createClient({
    crossTab: false, budget: false, breaker: false,
    retry: { maxAttempts: 10, maxRetryAfterMs: 30000 },
  });
  globalThis.fetch = async (input, init) => {
    const n = ++sent;
    afterRead.push(readAt !== null);
    const path = n === 2 ? '/status/429?retryAfter=10&' : '/hang?';
    const res = await realFetch(`${server.url}${path}id=${id}`, { signal: init?.signal ?? input.signal });
    return n === 2 ? new Noted(res.body, res) : res;
  };
  t.after(() => { globalThis.fetch = realFetch; });
  const url = `${server.url}/api/items`;
  // Hedges every 300 ms: the 429 (answered at once) is read long before the
  // next one would be due, unless the machine is so busy that the timer
  // comes first: a hedge sent before the 429 was read is not one it stops.
  const first = client.request(url, { timeoutMs: 5000, deadlineMs: 30000, hedge: { afterMs: 300, max: 5 } }).catch((x) => x);
  for (let i = 0; i < 200 && readAt === null; i++) await sleep(10);
  assert.ok(readAt !== null, 'the client read the 429');
  await sleep(700);
  assert.deepEqual(afterRead.slice(0, 2), [false, false], 'the attempt, then the hedge answered 429');
  assert.equal(afterRead.filter((x) => x).length, 0, `${sent} requests went out: no hedge after the 429`);
  // Another call of the key (another query: not joined to the first by
  // dedupe) is held; its deadline is shorter than the hold.
  const before = sent;
  const other = await client.request(`${url}?other=1`, { deadlineMs: 2000 }).catch((x) => x);
  const since = performance.now() - readAt;
  assert.ok(other instanceof CircuitOpenError, `the other call: ${other?.name}`);
  // The hold is 10 s from the 429's arrival: what is left of it, less the
  // time since (on a busy machine, more than a second).
  assert.ok(other.retryInMs >= 10000 - since - 1 && other.retryInMs <= 10000, `retryInMs ${other.retryInMs}, ${Math.round(since)} ms after the 429`);
  assert.equal(sent, before, 'the other call sent nothing');
  client.close();
  await first;
  globalThis.fetch = realFetch;
  assert.equal((await log(id)).length, sent);
});
