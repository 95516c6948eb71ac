// One client shared by every user of a server (a Next.js server component or
// route handler, as the README recommends): what one user's calls leave
// behind must never reach another user (issue 27, items 1 to 3). A loopback
// backend answers per user (by the credential header the call sends), and is
// told to fail, to refuse one user, or to announce one user's spent quota.
//   - schema(): a credentialed call's document is neither kept nor served
//     (unless the caller names cacheKey), for each credential header;
//   - holds: a Retry-After or a spent per-user quota holds that user's calls,
//     not another's (breakers stay shared);
//   - caps: a hold binds the others for at most the client's own
//     retry.maxRetryAfterMs, whatever the learning call's options.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { AsyncLocalStorage } from 'node:async_hooks';
import { startServer } from '../server/server.mjs';
import { createClient, CircuitOpenError, HttpError } from '../../pkg/node.js';

const CREDENTIAL_HEADERS = ['cookie', 'authorization', 'proxy-authorization', 'x-api-key'];

/**
 * The backend: `GET /api/me` answers `{ user }`, the user being the value of
 * the credential header named by `?h=` (or 'anonymous'). `backend.mode`:
 * 'ok'; 'fail' (every call 503); `refuse: user` (that user's calls 429 with
 * `Retry-After: backend.retryAfter`); `spent: user` (that user's calls 200
 * with `RateLimit: "user";r=0;t=25`). Counts what each user sent.
 */
let backend;
before(async () => {
  const state = { mode: 'ok', retryAfter: '20', seen: [] };
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const user = req.headers[u.searchParams.get('h') ?? 'cookie'] ?? 'anonymous';
    state.seen.push(user);
    const json = (status, body, headers = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...headers });
      res.end(JSON.stringify(body));
    };
    if (state.mode === 'fail') return json(503, { error: 'down' });
    if (state.refuse === user) return json(429, { error: 'slow down' }, { 'retry-after': state.retryAfter });
    if (state.spent === user) {
      return json(200, { user }, { ratelimit: '"user";r=0;t=25', 'ratelimit-policy': '"user";q=10;w=60' });
    }
    return json(200, { user });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  backend = Object.assign(state, {
    url: (path, h = 'cookie') => `http://127.0.0.1:${srv.address().port}${path}?h=${h}`,
    reset() {
      Object.assign(state, { mode: 'ok', retryAfter: '20', refuse: undefined, spent: undefined, seen: [] });
    },
    close: () => new Promise((r) => srv.close(r)),
  });
});
after(() => backend?.close());

/** The outcome of a request() as plain data. */
async function outcome(client, url, options) {
  const started = performance.now();
  try {
    const data = await client.request(url, options);
    return { ok: true, data, ms: performance.now() - started };
  } catch (e) {
    return { ok: false, name: e.name, retryInMs: e.retryInMs, status: e.status, ms: performance.now() - started };
  }
}

for (const h of CREDENTIAL_HEADERS) {
  test(`schema(): alice's document (${h}) is never served to mallory, neither when the backend fails nor when the breaker is open`, async () => {
    backend.reset();
    // crossTab: false: one server process, nothing to tell.
    const client = await createClient({ retry: false, crossTab: false, breaker: { consecutiveFailures: 3 } });
    const url = backend.url('/api/me', h);
    const alice = await client.schema(url, { headers: { [h]: 'sid=alice' } });
    assert.equal(alice.source, 'network');
    assert.deepEqual(alice.data, { user: 'sid=alice' });

    backend.mode = 'fail';
    const failing = await client.schema(url, { headers: { [h]: 'sid=mallory' } });
    assert.notDeepEqual(failing.data, { user: 'sid=alice' }, "mallory got alice's document");
    assert.equal(failing.source, 'none');
    assert.ok(failing.error instanceof HttpError);

    // mallory opens the breaker (which is shared: the backend fails for all)
    for (let i = 0; i < 3; i++) await outcome(client, url, { headers: { [h]: 'sid=mallory' } });
    assert.equal(client.breakers()[0].state, 'open');
    const open = await client.schema(url, { headers: { [h]: 'sid=mallory' } });
    assert.notDeepEqual(open.data, { user: 'sid=alice' }, "mallory got alice's document");
    assert.equal(open.source, 'none');
    assert.ok(open.error instanceof CircuitOpenError);
    // alice gets no copy either: none was kept without a cacheKey
    assert.equal((await client.schema(url, { headers: { [h]: 'sid=alice' } })).source, 'none');
    client.close();
  });
}

test("schema(): a cacheKey the caller names is the caller's decision; the default key holds the call's own headers", async () => {
  backend.reset();
  const client = await createClient({ retry: false, crossTab: false, breaker: false });
  const url = backend.url('/api/me');
  await client.schema(url, { headers: { cookie: 'sid=alice' }, cacheKey: 'me:alice' });
  await client.schema(url, { headers: { 'accept-language': 'fr' } });
  backend.mode = 'fail';
  const mine = await client.schema(url, { headers: { cookie: 'sid=alice' }, cacheKey: 'me:alice' });
  assert.equal(mine.source, 'cache');
  assert.deepEqual(mine.data, { user: 'sid=alice' });
  // Two calls that differ in a header never share a copy.
  assert.equal((await client.schema(url, { headers: { 'accept-language': 'fr' } })).source, 'cache');
  assert.equal((await client.schema(url, { headers: { 'accept-language': 'de' } })).source, 'none');
  assert.equal((await client.schema(url)).source, 'none');
  client.close();
});

for (const h of CREDENTIAL_HEADERS) {
  test(`holds: mallory's 429 Retry-After: 20 (${h}) holds her calls, not bob's`, async () => {
    backend.reset();
    const client = await createClient({ retry: false, crossTab: false });
    const url = backend.url('/api/me', h);
    backend.refuse = 'sid=mallory';
    const refused = await outcome(client, url, { headers: { [h]: 'sid=mallory' } });
    assert.equal(refused.status, 429);
    const bob = await outcome(client, url, { headers: { [h]: 'sid=bob' }, deadlineMs: 5000 });
    assert.equal(bob.ok, true, `bob was refused: ${JSON.stringify(bob)}`);
    assert.deepEqual(bob.data, { user: 'sid=bob' });
    assert.ok(bob.ms < 1000, `bob waited ${bob.ms} ms`);
    // A call without credentials is not hers either.
    assert.equal((await outcome(client, url, { deadlineMs: 5000 })).ok, true);
    // Hers are held: beyond the deadline, refused at once without sending.
    const again = await outcome(client, url, { headers: { [h]: 'sid=mallory' }, deadlineMs: 5000 });
    assert.equal(again.name, 'CircuitOpenError');
    assert.ok(again.retryInMs > 15_000 && again.retryInMs <= 20_000, `retryInMs ${again.retryInMs}`);
    assert.deepEqual(backend.seen, ['sid=mallory', 'sid=bob', 'anonymous']);
    client.close();
  });
}

test('holds: mallory\'s spent per-user quota (RateLimit: "user";r=0;t=25) refuses her calls, not bob\'s', async () => {
  backend.reset();
  const client = await createClient({ retry: false, crossTab: false });
  const url = backend.url('/api/me');
  backend.spent = 'sid=mallory';
  assert.equal((await outcome(client, url, { headers: { cookie: 'sid=mallory' } })).ok, true);
  const bob = await outcome(client, url, { headers: { cookie: 'sid=bob' }, deadlineMs: 5000 });
  assert.equal(bob.ok, true, `bob was refused: ${JSON.stringify(bob)}`);
  assert.ok(bob.ms < 1000, `bob waited ${bob.ms} ms`);
  const again = await outcome(client, url, { headers: { cookie: 'sid=mallory' }, deadlineMs: 5000 });
  assert.equal(again.name, 'CircuitOpenError');
  assert.ok(again.retryInMs > 20_000, `retryInMs ${again.retryInMs}`);
  assert.deepEqual(backend.seen, ['sid=mallory', 'sid=bob']);
  client.close();
});

test("caps: a call allowed 2**31-1 ms given Retry-After: 86400 holds the others for the client's cap, not a day", async () => {
  backend.reset();
  const client = await createClient({ crossTab: false });
  const url = backend.url('/api/me');
  backend.refuse = 'anonymous';
  backend.retryAfter = '86400';
  const patient = await outcome(client, url, { retry: { maxRetryAfterMs: 2 ** 31 - 1 } });
  assert.equal(patient.status, 429);
  backend.refuse = undefined;
  const other = await outcome(client, url, { deadlineMs: 5000 });
  assert.equal(other.name, 'CircuitOpenError');
  assert.ok(other.retryInMs <= 30_000, `held for ${other.retryInMs} ms, beyond the client's 30 s cap`);
  client.close();
});

test("caps: a retry: false call on a client capped at 1000 ms given Retry-After: 25 holds the others 1 s, not 25 s", async () => {
  backend.reset();
  const client = await createClient({ crossTab: false, retry: { maxRetryAfterMs: 1000 } });
  const url = backend.url('/api/me');
  backend.refuse = 'anonymous';
  backend.retryAfter = '25';
  const once = await outcome(client, url, { retry: false });
  assert.equal(once.status, 429);
  backend.refuse = undefined;
  const other = await outcome(client, url, { deadlineMs: 5000 });
  assert.equal(other.ok, true, `held: ${JSON.stringify(other)}`);
  assert.ok(other.ms >= 900 && other.ms < 2500, `went after ${other.ms} ms`);
  client.close();
});

test('cross-tab: a cooldown told to other tabs carries the digest of its credentials, and binds only those', async () => {
  backend.reset();
  // What this client tells the other tabs, heard on its channel.
  const told = [];
  const listen = new BroadcastChannel('stormguard-tabs:i27-scope-a:');
  listen.unref();
  listen.onmessage = (e) => told.push(e.data);
  const a = await createClient({ retry: false, storage: { prefix: 'i27-scope-a:' } });
  const url = backend.url('/api/me', 'x-api-key');
  backend.refuse = 'mallory-s3cret';
  await outcome(a, url, { headers: { 'x-api-key': 'mallory-s3cret' } });
  for (let i = 0; i < 100 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  listen.close();
  assert.equal(told.length, 1);
  const [cooldown] = told;
  assert.equal(cooldown.t, 'cooldown');
  assert.ok(Number.isSafeInteger(cooldown.s) && cooldown.s >= 0, `the scope is a fixed-size digest: ${cooldown.s}`);
  assert.ok(!JSON.stringify(cooldown).includes('s3cret'), 'never the secret');

  // Another tab (a client of another prefix, told by a channel of "another
  // realm") holds mallory's calls and not bob's, nor calls without credentials.
  const b = await createClient({ retry: false, storage: { prefix: 'i27-scope-b:' } });
  const tab = new BroadcastChannel('stormguard-tabs:i27-scope-b:');
  tab.unref();
  const send = async (msg) => {
    tab.postMessage({ ...msg, r: 'another-tab' });
    await new Promise((r) => setTimeout(r, 50));
  };
  await send(cooldown);
  backend.refuse = undefined;
  const bob = await outcome(b, url, { headers: { 'x-api-key': 'bob' }, deadlineMs: 5000 });
  assert.ok(bob.ok && bob.ms < 1000, `bob was held by mallory's cooldown: ${JSON.stringify(bob)}`);
  assert.equal((await outcome(b, url, { deadlineMs: 5000 })).ok, true);
  const mallory = await outcome(b, url, { headers: { 'x-api-key': 'mallory-s3cret' }, deadlineMs: 5000 });
  assert.equal(mallory.name, 'CircuitOpenError', 'her calls in the other tab are held');
  // A scope that is not a digest this code writes: the message is dropped
  // (it binds neither her calls nor those without credentials).
  const c = await createClient({ retry: false, storage: { prefix: 'i27-scope-c:' } });
  const tabC = new BroadcastChannel('stormguard-tabs:i27-scope-c:');
  tabC.unref();
  for (const s of [String(cooldown.s), 0.5, -1, 2 ** 53, NaN, Infinity, null, 'k'.repeat(1 << 20)]) {
    tabC.postMessage({ ...cooldown, s, r: 'another-tab' });
  }
  await new Promise((r) => setTimeout(r, 50));
  for (const headers of [{ 'x-api-key': 'mallory-s3cret' }, {}]) {
    const free = await outcome(c, url, { headers, deadlineMs: 5000 });
    assert.ok(free.ok && free.ms < 1000, JSON.stringify(free));
  }
  tab.close();
  tabC.close();
  for (const x of [a, b, c]) x.close();
});

// Credentials that the client adds (issue 25): `auth.token` or a `headers`
// function reading who is being served from per-request state (Next.js's
// cookies()/headers(), here an AsyncLocalStorage). The scope of a hold is
// the credential headers as sent, so it must be read before admission.
let fault;
before(async () => {
  fault = await startServer();
});
after(() => fault?.close());

/** The user a request of the server is being served for. */
const serving = new AsyncLocalStorage();

/**
 * The ways a client adds the credential of the user being served, each
 * recording in `reads` whom it read: `auth.token`, a `headers` function and
 * (issue 37) a `beforeRequest` hook, whose credential admission judges too.
 */
const FROM = [
  ['auth.token', (reads) => ({ auth: { origins: [fault.url], token: () => (reads.push(serving.getStore()), serving.getStore()) } })],
  [
    'a headers function',
    (reads) => ({ headers: () => (reads.push(serving.getStore()), { authorization: `Bearer ${serving.getStore()}` }) }),
  ],
  [
    'a beforeRequest hook',
    (reads) => ({
      hooks: {
        beforeRequest: (request) => {
          reads.push(serving.getStore());
          request.headers.set('authorization', `Bearer ${serving.getStore()}`);
        },
      },
    }),
  ],
];

for (const [how, options] of FROM) {
  test(`holds from ${how}: alice's 429 Retry-After: 20 holds her calls, not bob's, on one shared client`, async () => {
    const reads = [];
    const client = await createClient({ retry: false, crossTab: false, ...options(reads) });
    const id = `i25-scope-${how.replace(/\W/g, '')}`;
    const url = `${fault.url}/auth?accept=alice,bob&refuse=alice&retryAfter=20&id=${id}`;
    const as = (user, opts) => serving.run(user, () => outcome(client, url, opts));
    const refused = await as('alice');
    assert.equal(refused.status, 429, JSON.stringify(refused));
    const bob = await as('bob', { deadlineMs: 5000 });
    assert.equal(bob.ok, true, `bob was held by alice's 429: ${JSON.stringify(bob)}`);
    assert.equal(bob.data.token, 'bob');
    assert.ok(bob.ms < 1000, `bob waited ${bob.ms} ms`);
    // Hers are held: beyond the deadline, refused at once without sending.
    const again = await as('alice', { deadlineMs: 5000 });
    assert.equal(again.name, 'CircuitOpenError', JSON.stringify(again));
    assert.ok(again.retryInMs > 15_000 && again.retryInMs <= 20_000, `retryInMs ${again.retryInMs}`);
    // One read per call (the held one read it to know whose it is), two requests sent.
    assert.deepEqual(reads, ['alice', 'bob', 'alice']);
    const log = await (await fetch(`${fault.url}/_log?id=${id}`)).json();
    assert.deepEqual(log.map((e) => e.status), [429, 200]);
    client.close();
  });
}

// Dedupe never crosses credentials (issue 37, row 11): two users' identical
// GETs in flight together on one shared client each get their own answer,
// whichever way the client adds the credential; one user's two share one.
for (const [how, options] of FROM) {
  test(`dedupe with credentials from ${how}: alice's and bob's identical GETs in flight together never share an answer`, async () => {
    const reads = [];
    const client = await createClient({ crossTab: false, ...options(reads) });
    const id = `i37-dedupe-${how.replace(/\W/g, '')}`;
    const url = `${fault.url}/auth?accept=alice,bob&delay=300&id=${id}`;
    const as = (user) => serving.run(user, () => outcome(client, url));
    const [alice, bob, again] = await Promise.all([as('alice'), as('bob'), as('alice')]);
    assert.equal(bob.ok, true, JSON.stringify(bob));
    assert.equal(bob.data.token, 'bob', "bob got alice's answer");
    assert.equal(alice.data.token, 'alice');
    assert.equal(again.data.token, 'alice');
    assert.equal(client.stats().deduped, 1, "alice's second call joined her first");
    assert.equal((await (await fetch(`${fault.url}/_log?id=${id}`)).json()).length, 2, 'one request per user');
    assert.deepEqual(reads.sort(), ['alice', 'alice', 'bob'], 'read once per call, before it joined');
    client.close();
  });
}

// Hooks before admission (issue 37, row 8): a beforeRequest hook that fetches
// a CSRF token through the same client holds no slot while it does, so it
// cannot wait behind the calls whose hooks are running.
test('a beforeRequest hook that calls the same client (a CSRF token) does not deadlock once concurrency.max calls are in flight', async () => {
  const id = 'i37-csrf';
  let fetched = 0;
  const client = await createClient({
    crossTab: false,
    concurrency: { max: 2, queue: 100 },
    deadlineMs: 5000,
    hooks: {
      beforeRequest: async (request) => {
        if (new URL(request.url).searchParams.has('csrf')) return;
        fetched++;
        const { query } = await client.request(`${fault.url}/echo?id=${id}-token&csrf=t0k`);
        request.headers.set('x-csrf', query.csrf);
      },
    },
  });
  const calls = await Promise.all(
    Array.from({ length: 6 }, (_, i) => outcome(client, `${fault.url}/echo?id=${id}&n=${i}`, { method: 'POST', body: {} })),
  );
  for (const c of calls) assert.equal(c.ok, true, JSON.stringify(c));
  assert.ok(calls.every((c) => c.data.headers['x-csrf'] === 't0k'), 'each call sent the token its hook fetched');
  assert.equal(fetched, 6);
  const s = client.stats();
  assert.deepEqual([s.inFlight, s.queued], [0, 0]);
  client.close();
});
