// auth.refresh and the hooks in Node, against the fault server (issue 37, rows 5, 6, 7 and 11's
// refresh; README, "Auth tokens and refresh" and
// "hooks"). Every wait is ended by a rule (a deadline, an abort, close()), and what is
// asserted is the rule that ended it (the error's cause, retryDenied, what the server saw),
// never a duration.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { startServer } from '../server/server.mjs';
import { createClient, HttpError, TimeoutError } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.close());

const log = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const settled = (p) => p.then((value) => ({ ok: true, value }), (e) => e);

test('a refresh that stalls is bounded by the deadline of the call that started it, then forgotten: a later 401 refreshes again', async () => {
  let token = 'old';
  let refreshes = 0;
  let refreshing;
  const refreshed = new Promise((r) => { refreshing = r; });
  const api = await createClient({
    baseUrl: `${server.url}/`,
    retry: false,
    auth: {
      token: () => token,
      // The first refresh never settles; the second works.
      refresh: () => {
        refreshing();
        return ++refreshes === 1 ? new Promise(() => {}) : void (token = 'new');
      },
    },
  });
  const users = api.extend({ headers: { 'x-module': 'users' } });
  // `first` starts the refresh (its deadline 1000 ms); `waiting`, with 10 s, made once the refresh
  // has started (not after a fixed time, which a busy machine can spend before the 401 is in),
  // waits for that refresh.
  const first = settled(api.request('auth?accept=new&id=r-stall-1', { deadlineMs: 1000 }));
  await refreshed;
  const waiting = settled(users.request('auth?accept=new&id=r-stall-2', { deadlineMs: 10000 }));
  const a = await first;
  assert.ok(a instanceof HttpError, String(a));
  assert.equal(a.status, 401);
  // Its deadline ends both its wait and the refresh's bound: either timer may fire first.
  assert.ok(a.retryDenied === 'deadline' || a.cause instanceof TimeoutError, 'the starting call ends at its deadline');
  const b = await waiting;
  assert.ok(b instanceof HttpError, String(b));
  assert.ok(b.cause instanceof TimeoutError, 'the waiter ends with the refresh, at the deadline of the call that started it');
  assert.equal(refreshes, 1);
  // Forgotten: a later 401 (of the client or a derived one) refreshes again.
  const later = await users.request('auth?accept=new&id=r-stall-3', { deadlineMs: 10000 });
  assert.equal(later.token, 'new');
  assert.equal(refreshes, 2);
  assert.equal(api.stats().inFlight, 0);
  api.close();
});

test('refresh is shared per stale token: two users of a server client each get their own refresh', async () => {
  const als = new AsyncLocalStorage();
  const sessions = { alice: 'alice-old', bob: 'bob-old' };
  const refreshed = { alice: 0, bob: 0 };
  const api = await createClient({
    baseUrl: `${server.url}/`,
    retry: false,
    auth: {
      token: () => sessions[als.getStore()],
      refresh: async () => {
        const user = als.getStore();
        refreshed[user]++;
        await sleep(50);
        sessions[user] = `${user}-new`;
      },
    },
  });
  const call = (user, n) => als.run(user, () => api.request(`auth?accept=alice-new,bob-new&delay=50&id=r-per-token&n=${n}`));
  const got = await Promise.all([call('alice', 1), call('alice', 2), call('bob', 3), call('bob', 4)].map(settled));
  assert.deepEqual(got.map((g) => g.value?.token ?? String(g)), ['alice-new', 'alice-new', 'bob-new', 'bob-new']);
  assert.deepEqual(refreshed, { alice: 1, bob: 1 }, 'one refresh per stale token');
  assert.equal((await log('r-per-token')).length, 8);
  api.close();
});

test("calls made inside refresh() never wait for a refresh: the refresh endpoint's 401 ends the call at once", async () => {
  // The usual recipe, the refresh endpoint refusing the expired refresh token (401), and the same
  // after an await (Node tells those calls by their async context).
  const recipes = {
    sync: (api) => () => api.request('auth?accept=fresh&id=r-inner-refresh-sync', { method: 'POST' }),
    awaited: (api) => async () => {
      await sleep(10);
      await api.extend({ headers: { 'x-from': 'refresh' } }).request('auth?accept=fresh&id=r-inner-refresh-awaited', { method: 'POST' });
    },
  };
  for (const [name, recipe] of Object.entries(recipes)) {
    let refreshes = 0;
    const api = await createClient({
      baseUrl: `${server.url}/`,
      retry: false,
      deadlineMs: 3000,
      auth: { token: () => 'stale', refresh: () => (refreshes++, recipe(api)()) },
    });
    const e = await api.request(`auth?accept=fresh&id=r-inner-${name}`).catch((x) => x);
    assert.ok(e instanceof HttpError, `${name}: ${e}`);
    assert.equal(e.status, 401, name);
    assert.ok(e.cause instanceof HttpError && e.cause.status === 401, `${name}: the refresh's own 401 is the cause, not the deadline (${e.retryDenied})`);
    assert.equal(refreshes, 1, name);
    assert.equal((await log(`r-inner-${name}`)).length, 1, name);
    assert.equal((await log(`r-inner-refresh-${name}`)).length, 1, `${name}: the refresh call sent once, not replayed`);
    assert.equal(api.stats().inFlight, 0);
    // Outside refresh() the client still refreshes, and its calls inside that refresh are told again.
    const again = await api.request(`auth?accept=fresh&id=r-inner-${name}-after`).catch((x) => x);
    assert.equal(refreshes, 2, `${name}: a later call's 401 refreshes`);
    assert.equal(again.status, 401);
    assert.equal(again.cause?.status, 401, `${name}: the second refresh's call ended at once too (${again.retryDenied})`);
    api.close();
  }
});

test('a beforeError hook that never settles: an abort, close() or the deadline ends the wait for it', async () => {
  let called;
  const asked = () => new Promise((r) => (called = r));
  const hangs = () => {
    called();
    return new Promise(() => {});
  };
  // (Before the wait was bounded, each of these calls settled at its 5 s deadline with its own error.)
  const api = await createClient({ baseUrl: `${server.url}/`, retry: false, breaker: false, deadlineMs: 5000, hooks: { beforeError: hangs } });
  // request(): the caller's abort, the call's AbortError with its reason, id and attempts.
  let hook = asked();
  const ctl = new AbortController();
  const aborted = settled(api.request('status/500?id=r-error-abort', { signal: ctl.signal }));
  await hook;
  ctl.abort('mine');
  const a = await aborted;
  assert.deepEqual([a.name, a.reason, a.attempts, a.requestId !== ''], ['AbortError', 'mine', 1, true], String(a));
  // fetch(): rejects with the caller's reason, as the host's fetch does.
  hook = asked();
  const ctl2 = new AbortController();
  const fetched = settled(api.fetch('http://127.0.0.1:9/refused', { signal: ctl2.signal }));
  await hook;
  ctl2.abort('mine too');
  assert.equal(await fetched, 'mine too');
  // close() of the root ends a derived client's wait: AbortError, reason 'client closed'.
  const child = api.extend({ headers: { 'x-module': 'child' } });
  hook = asked();
  const closing = settled(child.request('status/500?id=r-error-close'));
  await hook;
  api.close();
  const c = await closing;
  assert.deepEqual([c.name, c.reason], ['AbortError', 'client closed'], String(c));
  // The deadline: the call's own error.
  const late = await createClient({ retry: false, breaker: false, deadlineMs: 300, hooks: { beforeError: () => new Promise(() => {}) } });
  const d = await settled(late.request(`${server.url}/status/500?id=r-error-deadline`));
  assert.deepEqual([d.name, d.status], ['HttpError', 500]);
  // Hooks that answer at once still replace the error of an aborted call.
  const sync = await createClient({ retry: false, hooks: { beforeError: (e) => Object.assign(e, { seen: true }) } });
  const s = await settled(sync.request(`${server.url}/hang?id=r-error-sync`, { signal: AbortSignal.timeout(50) }));
  assert.deepEqual([s.name, s.seen], ['AbortError', true]);
  late.close();
  sync.close();
});

test('afterResponse returning Response.error() is a network error, as fetch rejects with', async () => {
  const client = await createClient({ retry: false, breaker: false, hooks: { afterResponse: () => Response.error() } });
  const e = await settled(client.request(`${server.url}/echo?id=r-error-response`));
  assert.deepEqual([e.name, e.cause?.name], ['NetworkError', 'TypeError'], String(e));
  const f = await settled(client.fetch(`${server.url}/echo?id=r-error-response`));
  assert.ok(f instanceof TypeError, String(f));
  assert.equal(f.cause?.name, 'NetworkError');
  client.close();
});

test("Node: the async context that marks calls inside refresh() is dropped once no refresh is under way", async () => {
  // Node 20 tracks every promise of the process while an AsyncLocalStorage is enabled (an await
  // costs several times more): the one that marks refresh()'s calls is enabled only while a
  // refresh runs. Seen from a process of its own (this one enables AsyncLocalStorages above): a
  // promise made while one is enabled carries its store's symbol.
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const script = `
    import { createClient } from ${JSON.stringify(new URL('../../pkg/node.js', import.meta.url).href)};
    const stores = () => Object.getOwnPropertySymbols(new Promise(() => {})).filter((s) => String(s) === 'Symbol(kResourceStore)').length;
    let token = 'old';
    let during = -1;
    const api = await createClient({
      baseUrl: ${JSON.stringify(`${server.url}/`)}, retry: false,
      auth: { token: () => token, refresh: async () => { await null; during = stores(); token = 'new'; } },
    });
    const got = await api.request('auth?accept=new&id=r-scope');
    await new Promise((r) => setTimeout(r, 10));
    console.log(JSON.stringify({ token: got.token, during, after: stores() }));
    api.close();
  `;
  // (Not execFileSync: the fault server answers from this process.)
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  const out = JSON.parse(stdout);
  assert.equal(out.token, 'new');
  assert.equal(out.after, 0, 'no AsyncLocalStorage left enabled after the refresh');
  if (Number(process.versions.node.split('.')[0]) === 20) assert.equal(out.during, 1, 'enabled while it ran (Node 20)');
});
