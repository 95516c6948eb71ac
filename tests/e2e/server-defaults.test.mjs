// README, "Server clients" (issue 40, item 1): where there is no `window`, one client serves many
// users, so `concurrency` defaults to { max: 256, queue: 10000 } and `breaker.consecutiveFailures` to
// false; options given explicitly win; a client made where there is a `window` keeps a page's
// defaults. The assertions are on what the backend saw (its concurrency, its log), never on timings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createClient, CircuitOpenError, HttpError } from '../../pkg/node.js';

/**
 * A backend that holds every request until `n` are in flight together, then answers them all (or,
 * should they never all arrive, answers what it holds after 4 s, within the attempt's 6 s): what a
 * 1 s backend shows without depending on how fast a busy machine sends. `most` is the largest number
 * it held at once.
 */
async function barrier(n) {
  const held = [];
  let most = 0;
  const release = () => held.splice(0).forEach((res) => res.end('{}'));
  const srv = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    held.push(res);
    most = Math.max(most, held.length);
    if (held.length >= n) release();
  });
  const timer = setInterval(release, 4000);
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: (u) => `http://127.0.0.1:${srv.address().port}/x?u=${u}`,
    most: () => most,
    close: () => { clearInterval(timer); release(); return new Promise((r) => srv.close(r)); },
  };
}

/** `n` users' calls at once (each its own query: dedupe shares only identical calls); their ends. */
const users = (client, backend, n) =>
  Promise.all(Array.from({ length: n }, (_, u) => client.request(backend.url(u)).then(() => 'ok', (e) => e.code)));

test("30 users at once: the backend sees all 30 together (a page's default lets 6 through)", async () => {
  const backend = await barrier(30);
  try {
    const client = await createClient({ crossTab: false });
    const ends = await users(client, backend, 30);
    assert.deepEqual(ends.filter((e) => e !== 'ok'), []);
    assert.equal(backend.most(), 30);
    client.close();
  } finally {
    await backend.close();
  }
});

test('120 users at once: none is refused with QUEUE_FULL (a page\'s queue of 100 refuses 14)', async () => {
  const backend = await barrier(120);
  try {
    const client = await createClient({ crossTab: false });
    const ends = await users(client, backend, 120);
    assert.deepEqual(ends.filter((e) => e !== 'ok'), []);
    assert.equal(client.stats().queueRejected, 0);
    assert.equal(backend.most(), 120);
    client.close();
  } finally {
    await backend.close();
  }
});

test('given explicitly, a page\'s concurrency holds on a server too', async () => {
  const backend = await barrier(6);
  try {
    const client = await createClient({ crossTab: false, concurrency: { max: 6, queue: 100 } });
    const ends = await users(client, backend, 12);
    assert.deepEqual(ends.filter((e) => e !== 'ok'), []);
    assert.equal(backend.most(), 6, 'six at a time');
    const refused = await users(client, backend, 110);
    assert.equal(refused.filter((e) => e === 'QUEUE_FULL').length, 4, '6 in flight, 100 queued, 4 refused');
    client.close();
  } finally {
    await backend.close();
  }
});

/** A backend whose `/me` answers 500 to alice and 200 to everyone else; counts what each sent. */
async function meBackend() {
  const seen = [];
  const srv = http.createServer((req, res) => {
    const user = req.headers.cookie ?? 'anonymous';
    seen.push(user);
    const status = user === 'sid=alice' ? 500 : 200;
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
    res.end(JSON.stringify({ user }));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { seen, url: `http://127.0.0.1:${srv.address().port}/me`, close: () => new Promise((r) => srv.close(r)) };
}

/** Alice's call (three attempts, each a 500), then bob's: what bob got, and the breaker's state. */
async function aliceThenBob(client, url) {
  const alice = await client.request(url, { headers: { cookie: 'sid=alice' } }).catch((e) => e);
  assert.ok(alice instanceof HttpError && alice.status === 500 && alice.attempts === 3, `${alice?.name} ${alice?.attempts}`);
  const bob = await client.request(url, { headers: { cookie: 'sid=bob' } }).catch((e) => e);
  return { bob, state: client.breakers()[0].state };
}

test("one user's three 500s from /me do not open /me for every user", async () => {
  const backend = await meBackend();
  try {
    // The defaults but for a short backoff (retry's options leave the breaker's defaults alone).
    const client = await createClient({ crossTab: false, retry: { baseDelayMs: 5 } });
    const { bob, state } = await aliceThenBob(client, backend.url);
    assert.deepEqual(bob, { user: 'sid=bob' }, `bob got ${bob?.name}`);
    assert.equal(state, 'closed', 'three failures are under minSamples (10), and there is no run rule');
    assert.deepEqual(backend.seen, ['sid=alice', 'sid=alice', 'sid=alice', 'sid=bob']);
    client.close();

    // The rate still opens it once minSamples (10) samples of all users say the backend fails.
    const rate = await createClient({ crossTab: false, retry: false });
    for (let i = 0; i < 9; i++) await assert.rejects(rate.request(backend.url, { headers: { cookie: 'sid=alice' } }), HttpError);
    assert.equal(rate.breakers()[0].state, 'closed', 'nine samples, under minSamples');
    await assert.rejects(rate.request(backend.url, { headers: { cookie: 'sid=alice' } }), HttpError);
    assert.equal(rate.breakers()[0].state, 'open', 'the tenth failed sample opens it by the rate');
    rate.close();

    // Given explicitly, the run rule holds on a server too.
    const run = await createClient({ crossTab: false, retry: { baseDelayMs: 5 }, breaker: { consecutiveFailures: 3 } });
    const explicit = await aliceThenBob(run, backend.url);
    assert.ok(explicit.bob instanceof CircuitOpenError, `bob got ${JSON.stringify(explicit.bob)}`);
    assert.equal(explicit.state, 'open');
    run.close();
  } finally {
    await backend.close();
  }
});

test('a client made where there is a `window` keeps a page\'s defaults (the host is read at createClient)', async () => {
  const backend = await meBackend();
  const slots = await barrier(6);
  globalThis.window = globalThis;
  let page;
  try {
    page = await createClient({ crossTab: false, retry: { baseDelayMs: 5 } });
  } finally {
    delete globalThis.window;
  }
  try {
    const { bob, state } = await aliceThenBob(page, backend.url);
    assert.ok(bob instanceof CircuitOpenError, `bob got ${JSON.stringify(bob)}`);
    assert.equal(state, 'open', "a page's three failures in a row open it");
    const ends = await users(page, slots, 12);
    assert.deepEqual(ends.filter((e) => e !== 'ok'), []);
    assert.equal(slots.most(), 6, "a page's six slots");
    page.close();
  } finally {
    await backend.close();
    await slots.close();
  }
});
