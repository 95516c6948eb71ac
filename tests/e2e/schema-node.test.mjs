// schema() in Node (pkg/node.js, after `node scripts/build.mjs`): no
// LocalStorage, so the last-good copy lives in memory for the client's life,
// and the result's error is an instance of the package's classes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import {
  createClient, HttpError, ParseError, AbortError, CircuitOpenError, isStormguardError,
} from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.close());

const url = (path, id) => `${server.url}${path}${path.includes('?') ? '&' : '?'}id=${id}`;
const log = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

test('Node keeps the last-good copy in memory and serves it when the server fails', async () => {
  assert.equal(globalThis.localStorage, undefined, 'this Node has no LocalStorage');
  const client = await createClient({ retry: false });
  const fallbacks = [];
  const storage = [];
  client.on('fallback', (e) => fallbacks.push(e));
  client.on('storage', (e) => storage.push(e));

  const first = await client.schema(url('/echo', 'sn-mem'), { cacheKey: 'doc', version: 2 });
  assert.equal(first.source, 'network');
  assert.equal(first.stale, false);
  assert.equal(first.error, undefined);
  assert.equal(first.data.method, 'GET');

  await new Promise((r) => setTimeout(r, 20));
  const r = await client.schema(url('/status/503', 'sn-mem'), { cacheKey: 'doc', version: 2 });
  assert.equal(r.source, 'cache');
  assert.equal(r.stale, true);
  assert.ok(r.ageMs >= 15, `ageMs ${r.ageMs}`);
  assert.ok(r.error instanceof HttpError && isStormguardError(r.error), 'error is the class instance');
  assert.equal(r.error.status, 503);
  assert.equal(r.data.path, '/echo');

  // A fresh copy on every read; another version is not served.
  r.data.path = 'changed';
  assert.equal((await client.schema(url('/status/503', 'sn-mem'), { cacheKey: 'doc', version: 2 })).data.path, '/echo');
  const other = await client.schema(url('/status/503', 'sn-mem'), { cacheKey: 'doc', version: 3, fallback: 'built in' });
  assert.equal(other.source, 'fallback');
  assert.equal(other.data, 'built in');

  assert.equal(client.stats().fallbacks, 3);
  assert.equal(fallbacks.length, 3);
  assert.equal(fallbacks[0].errorName, 'HttpError');
  assert.deepEqual(storage, [], 'no storage at all is not a storage fault');

  // The copy is this client's: another client has none.
  const stranger = await createClient({ retry: false });
  const none = await stranger.schema(url('/status/503', 'sn-mem'), { cacheKey: 'doc', version: 2 });
  assert.equal(none.source, 'none');
  assert.equal(none.data, undefined);
  assert.ok(none.error instanceof HttpError);
  client.close();
  stranger.close();
});

test('maxEntryBytes limits LocalStorage copies, not the memory copy Node keeps', async () => {
  const client = await createClient({ retry: false, storage: { maxEntryBytes: 16 } });
  const storage = [];
  client.on('storage', (e) => storage.push(e));
  const first = await client.schema(url('/echo', 'sn-big'));
  assert.equal(first.source, 'network');
  assert.ok(JSON.stringify(first.data).length > 16);
  const r = await client.schema(url('/status/503', 'sn-big'), { cacheKey: url('/echo', 'sn-big') });
  assert.equal(r.source, 'cache');
  assert.deepEqual(r.data, first.data);
  assert.deepEqual(storage, []);
});

test('storage: false, validate, an open breaker and an abort in Node', async () => {
  const client = await createClient({ retry: false, storage: false, breaker: { consecutiveFailures: 1 } });
  const ok = await client.schema(url('/echo', 'sn-misc'), { cacheKey: 'doc' });
  assert.equal(ok.source, 'network');

  // validate rejects this network copy, not the cached one (which it checks too before serving it).
  const rejected = await client.schema(url('/echo?n=2', 'sn-misc'), { cacheKey: 'doc', validate: (v) => v.query.n !== '2' });
  assert.equal(rejected.source, 'cache');
  assert.ok(rejected.error instanceof ParseError);
  assert.equal(client.breakers()[0].state, 'closed', 'validate is not a breaker failure');

  await client.schema(url('/status/503', 'sn-misc'), { cacheKey: 'doc' });
  const open = await client.schema(url('/status/503', 'sn-quiet'), { cacheKey: 'doc' });
  assert.equal(open.source, 'cache');
  assert.ok(open.error instanceof CircuitOpenError);
  assert.equal((await log('sn-quiet')).length, 0, 'an open breaker sends nothing');

  const ctl = new AbortController();
  const pending = client.schema(url('/hang', 'sn-misc'), { cacheKey: 'doc', signal: ctl.signal });
  setTimeout(() => ctl.abort('gone'), 30);
  await assert.rejects(pending, (e) => e instanceof AbortError && e.reason === 'gone');
  client.close();
});

test('schema() answers from the cache at once during a Retry-After, and refuses an async validate', async () => {
  const client = await createClient();
  const o = { cacheKey: 'doc', breakerKey: 'doc' };
  assert.equal((await client.schema(url('/echo', 'sn-wait'), o)).source, 'network');
  // A 503 asking for 4 s: this call gives up (retry: false), the key cools down.
  const busy = await client.schema(url('/status/503?retryAfter=4', 'sn-wait'), { ...o, retry: false });
  assert.equal(busy.source, 'cache');
  const t0 = performance.now();
  const r = await client.schema(url('/echo', 'sn-wait'), o);
  const took = performance.now() - t0;
  assert.equal(r.source, 'cache', 'served from the cache, not after waiting out the cooldown');
  assert.ok(took < 1000, `took ${took} ms`);
  assert.ok(r.error instanceof CircuitOpenError);
  // request() still waits a cooldown out (within its deadline) rather than fail.
  const t1 = performance.now();
  await client.request(url('/echo', 'sn-wait'), { breakerKey: 'doc' });
  assert.ok(performance.now() - t1 > 2000, 'request() waited for the cooldown');

  // (It refuses the cached copy alike: a predicate's promise proves nothing. An async check is a Standard Schema.)
  const v = await client.schema(url('/echo', 'sn-async'), { cacheKey: 'doc', validate: async () => true });
  assert.equal(v.source, 'none');
  assert.ok(v.error instanceof ParseError);
  assert.match(String(v.error.cause), /promise/);
  client.close();
});

test('a POST schema() is cached only under an explicit cacheKey; a stream body can be sent', async () => {
  const client = await createClient({ retry: false });
  const post = (body, o = {}) => client.schema(url('/echo', 'sn-post'), { method: 'POST', body, ...o });
  assert.equal((await post({ query: 'A' })).source, 'network');
  const failing = await client.schema(url('/status/503', 'sn-post'), { method: 'POST', body: { query: 'B' } });
  assert.equal(failing.source, 'none', 'query A is not served for query B');
  await post({ query: 'A' }, { cacheKey: 'qa' });
  const served = await client.schema(url('/status/503', 'sn-post'), { method: 'POST', body: { query: 'A' }, cacheKey: 'qa' });
  assert.equal(served.source, 'cache');
  // request() sends a ReadableStream body (duplex 'half').
  const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('streamed')); c.close(); } });
  const echoed = await client.request(url('/echo', 'sn-stream'), { method: 'PUT', body: stream });
  assert.equal(echoed.body, 'streamed');
  client.close();
});
