// stormguard/testing (issue 41, item 2): faultyFetch answers a client's
// attempts from a script, and the engine's backoff, open periods, attempt
// timeouts and deadlines run on the host's setTimeout, so fake timers move
// them: here node:test's MockTimers (setTimeout) and a performance.now that
// follows it, installed once for the whole file (node's MockTimers misplaces
// a timer cleared after a reset; swapping clocks is fake-clock.test.mjs's).
// The Vitest and Jest apps in tests/apps do the same with their own fake
// timers (tests/e2e/apps.test.mjs).
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, CircuitOpenError, HttpError, NetworkError, TimeoutError } from '../../pkg/node.js';
import { faultyFetch } from '../../pkg/testing.js';

const api = 'http://api.test';
const quiet = { crossTab: false, budget: false };

/** Lets every promise and queued task settle (setImmediate is not faked here). */
const flush = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};
// performance.now follows the fake clock, as under Vitest's and Jest's fake timers (which fake it
// too); MockTimers' tick runs only the timers due at its end, so time moves a millisecond at a time.
let fakeNow = 1_000_000;
performance.now = () => fakeNow;
/** Moves the fake clock by `ms`, then lets the engine react. */
const advance = async (ms) => {
  for (let i = 0; i < ms; i++) {
    fakeNow += 1;
    mock.timers.tick(1);
    await flush(2);
  }
  await flush();
};
/** The outcome of a pending promise, without waiting: undefined while pending. */
function track(p) {
  const t = { settled: undefined };
  p.then((value) => { t.settled = { value }; }, (error) => { t.settled = { error }; });
  return t;
}

mock.timers.enable({ apis: ['setTimeout'] });

/** Moves the fake clock on until `p` settles; its value (or throws its error). */
async function drive(p) {
  const t = track(p);
  for (let i = 0; i < 1000 && !t.settled; i++) await advance(10);
  assert.ok(t.settled, 'settled within 10 s of fake time');
  if ('error' in t.settled) throw t.settled.error;
  return t.settled.value;
}

test('replies in order per rule, then the fallback; .calls records each request', async () => {
  const fetch = faultyFetch([{ match: '/items', reply: [503, 'reset', { status: 200, json: [1, 2] }] }], { json: { other: true } });
  const client = await createClient({ ...quiet, fetch, retry: { maxAttempts: 3, baseDelayMs: 1, jitter: 'none' } });
  assert.deepEqual(await drive(client.request(`${api}/items`)), [1, 2]);
  assert.deepEqual(fetch.calls.map((c) => c.reply), [503, 'reset', { status: 200, json: [1, 2] }]);
  assert.deepEqual(fetch.calls.map((c) => c.url), Array(3).fill(`${api}/items`));
  // The rule is used up: the fallback answers; another URL never matched it.
  assert.deepEqual(await drive(client.request(`${api}/items`)), { other: true });
  assert.deepEqual(await drive(client.request(`${api}/users`)), { other: true });
  assert.deepEqual(fetch.calls.slice(3).map((c) => c.reply), ['fallback', 'fallback']);
  assert.equal(client.stats().attempts, 5);
  client.close();
});

test('a reset is a NetworkError, a 503 an HttpError; a POST without a key is sent exactly once', async () => {
  const fetch = faultyFetch([{ match: /\/orders$/, reply: [503] }, { match: (r) => r.url.endsWith('/ping'), reply: ['reset', 'reset'] }]);
  const client = await createClient({ ...quiet, fetch, retry: { maxAttempts: 2, baseDelayMs: 1 } });
  await assert.rejects(client.request(`${api}/orders`, { method: 'POST', body: { n: 1 } }), (e) => e instanceof HttpError && e.status === 503 && e.retryDenied === 'method');
  assert.equal(fetch.calls.length, 1);
  assert.equal(fetch.calls[0].method, 'POST');
  assert.equal(await fetch.calls[0].request.text(), '{"n":1}');
  await assert.rejects(drive(client.request(`${api}/ping`)), (e) => e instanceof NetworkError && e.attempts === 2);
  assert.equal(fetch.calls.length, 3);
  // With an idempotency key the POST is retried, the same key on both attempts.
  const keyed = faultyFetch([{ match: '/orders', reply: [503] }]);
  const c2 = await createClient({ ...quiet, fetch: keyed, retry: { baseDelayMs: 1 } });
  await drive(c2.request(`${api}/orders`, { method: 'POST', body: {}, idempotencyKey: 'k-1' }));
  assert.deepEqual(keyed.calls.map((c) => c.headers.get('idempotency-key')), ['k-1', 'k-1']);
  client.close();
  c2.close();
});

test('fake timers move the backoff: the retry goes when the clock reaches its delay, not before', async () => {
  const fetch = faultyFetch([{ reply: [503, 503] }]);
  const client = await createClient({ ...quiet, fetch, retry: { maxAttempts: 3, baseDelayMs: 1000, jitter: 'none' } });
  const call = track(client.request(`${api}/x`));
  await flush();
  assert.equal(fetch.calls.length, 1);
  await advance(999);
  assert.equal(fetch.calls.length, 1, 'the first backoff (1000 ms) is not over');
  await advance(1);
  assert.equal(fetch.calls.length, 2);
  await advance(1999);
  assert.equal(fetch.calls.length, 2, 'the second backoff (2000 ms) is not over');
  await advance(1);
  assert.equal(fetch.calls.length, 3);
  assert.deepEqual(call.settled, { value: {} });
  client.close();
});

test('a 429 with Retry-After: 1 holds the retry for one second of fake time', async () => {
  const fetch = faultyFetch([{ reply: [{ status: 429, retryAfter: 1 }] }]);
  const client = await createClient({ ...quiet, fetch, retry: { baseDelayMs: 1, jitter: 'none' } });
  const call = track(client.request(`${api}/limited`));
  await flush();
  await advance(990);
  assert.equal(fetch.calls.length, 1, 'Retry-After holds the retry');
  await advance(20);
  assert.equal(fetch.calls.length, 2);
  assert.deepEqual(call.settled, { value: {} });
  client.close();
});

test('fake timers move the open period: refused without a request until it ends, then a probe goes', async () => {
  const fetch = faultyFetch([{ reply: [500, 500, 500] }]);
  const client = await createClient({ ...quiet, fetch, retry: false, breaker: { consecutiveFailures: 3, openMs: 5000, maxOpenMs: 5000 } });
  for (let i = 0; i < 3; i++) await assert.rejects(client.request(`${api}/down`), HttpError);
  assert.equal(client.breakers()[0].state, 'open');
  await assert.rejects(client.request(`${api}/down`), CircuitOpenError);
  assert.equal(fetch.calls.length, 3, 'an open breaker sends nothing');
  await advance(4990);
  await assert.rejects(client.request(`${api}/down`), CircuitOpenError);
  await advance(20);
  assert.deepEqual(await client.request(`${api}/down`), {}, 'the probe goes and closes the breaker');
  assert.equal(fetch.calls.length, 4);
  assert.equal(client.breakers()[0].state, 'closed');
  client.close();
});

test('fake timers move attempt timeouts (a stalled body) and the deadline (no answer at all)', async () => {
  const fetch = faultyFetch([{ match: '/stall', reply: ['stall'] }, { match: '/hang', reply: ['hang'] }]);
  const client = await createClient({ ...quiet, fetch, retry: false, timeoutMs: 3000, deadlineMs: 20000 });
  const stalled = track(client.request(`${api}/stall`));
  await advance(2990);
  assert.equal(stalled.settled, undefined);
  await advance(20);
  assert.ok(stalled.settled?.error instanceof TimeoutError, String(stalled.settled?.error));
  assert.equal(stalled.settled.error.phase, 'attempt');
  assert.equal(fetch.calls[0].request.signal.aborted, true, 'the attempt was aborted');

  const hung = track(client.request(`${api}/hang`, { timeoutMs: 60000, deadlineMs: 8000 }));
  await advance(7990);
  assert.equal(hung.settled, undefined);
  await advance(20);
  assert.ok(hung.settled?.error instanceof TimeoutError, String(hung.settled?.error));
  assert.equal(hung.settled.error.phase, 'deadline');
  client.close();
});

test('{ delayMs } waits on the fake clock, then answers; an abort ends the wait as fetch does', async () => {
  const fetch = faultyFetch([{ reply: [{ delayMs: 500, status: 200, json: 'late' }, { delayMs: 500 }] }], { json: 'fallback' });
  const first = track(fetch(`${api}/slow`).then((r) => r.json()));
  await advance(490);
  assert.equal(first.settled, undefined);
  await advance(10);
  assert.deepEqual(first.settled, { value: 'late' });
  const second = track(fetch(`${api}/slow`).then((r) => r.json()));
  await advance(500);
  assert.deepEqual(second.settled, { value: 'fallback' }, 'a delay alone answers as the fallback');
  const ctrl = new AbortController();
  const stalled = faultyFetch([{ reply: ['stall'] }]);
  const res = await stalled(`${api}/s`, { signal: ctrl.signal });
  assert.equal(res.status, 200);
  const body = track(res.text());
  ctrl.abort();
  await flush();
  assert.equal(body.settled?.error?.name, 'AbortError');
});

test('a bad rule throws at once', () => {
  assert.throws(() => faultyFetch([{ match: 42, reply: [] }]), TypeError);
  assert.throws(() => faultyFetch([{ reply: 503 }]), TypeError);
});
