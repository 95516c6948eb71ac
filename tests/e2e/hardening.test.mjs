// Hardening, through the package's Node build (the same wasm a page runs):
// random and hostile option objects never poison the module, memory stays
// flat over 100k mixed calls, and idempotent POSTs execute exactly once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, createClientSync, isStormguardError, OptionsError } from '../../pkg/node.js';
import { initSync } from '../../pkg/stormguard.js';

/** The instance's linear memory among its exports (whose names the build minifies: scripts/minify-names.mjs). */
const memoryOf = (exports) => Object.values(exports).find((v) => v instanceof WebAssembly.Memory);

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

// A small seeded PRNG, so a failure names the case that caused it.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

const KEYS = {
  client: ['baseUrl', 'headers', 'timeoutMs', 'gatewayTimeoutMs', 'deadlineMs', 'retry', 'budget', 'breaker', 'concurrency', 'dedupe', 'storage', 'rateLimit'],
  retry: ['maxAttempts', 'baseDelayMs', 'maxDelayMs', 'jitter', 'statuses', 'methods', 'retryAfter', 'maxRetryAfterMs'],
  budget: ['ratio', 'minRetries', 'windowMs'],
  breaker: ['windowMs', 'minSamples', 'failureRate', 'consecutiveFailures', 'openMs', 'maxOpenMs', 'halfOpenProbes'],
  concurrency: ['max', 'queue'],
  storage: ['prefix', 'maxEntryBytes'],
  call: ['signal', 'timeoutMs', 'deadlineMs', 'retry', 'idempotencyKey', 'breakerKey', 'method', 'headers', 'query', 'body', 'responseType', 'rateLimit'],
};

const throwing = () => new Proxy({}, {
  get() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); },
  getPrototypeOf() { throw new Error('trap'); }, has() { throw new Error('trap'); },
  getOwnPropertyDescriptor() { throw new Error('trap'); },
});

function garbage(r, depth = 0) {
  const pick = Math.floor(r() * 22);
  switch (pick) {
    case 0: return NaN;
    case 1: return Infinity;
    case 2: return -Infinity;
    case 3: return -1;
    case 4: return 0;
    case 5: return 2 ** 31;
    case 6: return 1e308;
    case 7: return 3.5;
    case 8: return Math.floor(r() * 20000);
    case 9: return 'x'.repeat(Math.floor(r() * 5));
    case 10: return r() < 0.5;
    case 11: return null;
    case 12: return undefined;
    case 13: return [garbage(r, depth + 1), garbage(r, depth + 1)];
    case 14: return depth < 3 ? randomObject(r, KEYS[['retry', 'budget', 'breaker', 'concurrency', 'storage'][Math.floor(r() * 5)]], depth + 1) : {};
    case 15: return () => 1;
    case 16: return Symbol('s');
    case 17: return 10n;
    case 18: return throwing();
    case 19: return Object.create(null);
    case 20: return JSON.parse('{"__proto__": {"timeoutMs": -1}, "constructor": {"prototype": 1}}');
    default: return ['full', 'none', 'GET', 'json', 'bytes', 'http://127.0.0.1:1/', 'user:pw@x'][Math.floor(r() * 7)];
  }
}

function randomObject(r, keys, depth = 0) {
  const o = {};
  const n = Math.floor(r() * 4);
  for (let i = 0; i < n; i++) o[keys[Math.floor(r() * keys.length)]] = garbage(r, depth);
  if (r() < 0.1) o[`unknown${i8(r)}`] = garbage(r, depth);
  return o;
}
const i8 = (r) => Math.floor(r() * 256);

test('random option objects: each works or rejects OptionsError, and the module serves calls afterwards', async () => {
  const r = rng(20261130);
  let created = 0, rejected = 0, calls = 0;
  for (let i = 0; i < 1500; i++) {
    const opts = r() < 0.15 ? garbage(r) : randomObject(r, KEYS.client);
    let client;
    try {
      client = await createClient(opts);
      created++;
    } catch (e) {
      assert.ok(e instanceof OptionsError, `case ${i}: createClient rejected ${e?.name}: ${e?.message}`);
      assert.equal(typeof e.option, 'string');
      rejected++;
      continue;
    }
    const callOpts = r() < 0.15 ? garbage(r) : randomObject(r, KEYS.call);
    try {
      await client.request(`${server.url}/echo?id=fuzz`, callOpts);
    } catch (e) {
      assert.ok(isStormguardError(e), `case ${i}: request rejected a non-stormguard ${e?.name}: ${e?.message}`);
    }
    calls++;
    client.close();
  }
  const client = await createClient();
  const body = await client.request(`${server.url}/echo?id=fuzz-after`);
  assert.equal(body.method, 'GET');
  console.log(`fuzz: ${created} clients created, ${rejected} rejected with OptionsError, ${calls} calls made`);
  assert.ok(created > 100 && rejected > 100);
});

// Options are read as Reflect.get reads them (inherited members, getters, a Proxy's get), each once
// per request(), schema() or fetch(), and a getter that throws is an OptionsError naming it.
const logged = (target = {}) => {
  const reads = [];
  const proxy = new Proxy(target, { get(t, k, r) { if (typeof k === 'string') reads.push(k); return Reflect.get(t, k, r); } });
  return { reads, proxy };
};

test('call options: each read once, inherited members and getters count, a throwing getter is named', async () => {
  const client = await createClient();
  const url = `${server.url}/echo?id=reads`;
  const req = logged({ timeoutMs: 5000, headers: { 'x-a': '1' } });
  assert.equal((await client.request(url, req.proxy)).headers['x-a'], '1');
  assert.ok(['timeoutMs', 'headers', 'validate'].every((k) => req.reads.includes(k)), `${req.reads}`);
  assert.equal(new Set(req.reads).size, req.reads.length, `read twice: ${req.reads}`);
  // schema(): request()'s options and its own, `headers` (its cache key's) among them, each once.
  const sch = logged({ timeoutMs: 5000, headers: { 'x-a': '1' } });
  assert.equal((await client.schema(`${url}-schema`, sch.proxy)).data.headers['x-a'], '1');
  assert.ok(['timeoutMs', 'headers', 'cacheKey', 'fallback', 'validate'].every((k) => sch.reads.includes(k)), `${sch.reads}`);
  assert.equal(new Set(sch.reads).size, sch.reads.length, `read twice: ${sch.reads}`);
  // fetch(): stormguard's options, then the Request constructor's own members, each once.
  const init = logged({ method: 'POST', body: 'x', timeoutMs: 5000, headers: { 'x-a': '1' } });
  assert.equal((await (await client.fetch(url, init.proxy)).json()).method, 'POST');
  const policy = init.reads.filter((k) => ['timeoutMs', 'retry', 'idempotencyKey', 'breakerKey'].includes(k));
  assert.deepEqual(policy, ['timeoutMs', 'retry', 'idempotencyKey', 'breakerKey']);
  assert.ok(['method', 'headers', 'body'].every((k) => init.reads.includes(k)), `${init.reads}`);
  assert.equal(new Set(init.reads).size, init.reads.length, `read twice: ${init.reads}`);

  const inherited = Object.create({ method: 'NO SUCH METHOD' });
  await assert.rejects(client.request(url, inherited), (e) => e instanceof OptionsError && e.option === 'method');
  let got = 0;
  const getter = { get query() { got++; return { q: 'z' }; } };
  assert.equal((await client.request(url, getter)).query.q, 'z');
  assert.equal(got, 1);

  const throwing = Object.defineProperty({}, 'retry', { get() { throw new Error('trap'); } });
  for (const call of [() => client.request(url, throwing), () => client.schema(url, throwing), () => client.fetch(url, throwing)]) {
    await assert.rejects(call(), (e) => e instanceof OptionsError && e.option === 'retry' && /could not be read/.test(e.message));
  }
  client.close();
});

test('client options: createClient(), createClientSync() and extend() read each of fetch, headers, retry, deadlineMs and retry.retryOn once', async () => {
  // The wrapper and the engine share what was read: the load's wait, the engine and the client's
  // functions (UserFns) each need deadlineMs, both headers and retry, and retry's retryOn.
  const count = (reads, k) => reads.filter((r) => r === k).length;
  const once = (o) => {
    assert.deepEqual(['fetch', 'headers', 'retry', 'deadlineMs'].map((k) => count(o.reads, k)), [1, 1, 1, 1], `${o.reads}`);
    assert.equal(count(o.retry, 'retryOn'), 1, `retry: ${o.retry}`);
  };
  const given = (h) => {
    const retry = logged({ retryOn: () => undefined });
    const options = logged({ headers: { [h]: '1' }, fetch: (r) => fetch(r), retry: retry.proxy, deadlineMs: 5000 });
    return { ...options, retry: retry.reads };
  };
  const root = given('x-a');
  const client = await createClient(root.proxy);
  once(root);
  const child = given('x-b');
  const derived = client.extend(child.proxy);
  once(child);
  const body = await derived.request(`${server.url}/echo?id=client-reads`);
  assert.deepEqual([body.headers['x-a'], body.headers['x-b']], ['1', '1']);
  // Made before the engine is in, and derived from such a client: read once too.
  const early = given('x-c');
  const sync = createClientSync(early.proxy);
  const late = given('x-d');
  const lateChild = sync.extend(late.proxy);
  await lateChild.ready;
  once(early);
  once(late);
  sync.close();
  client.close();
});

test('a call made before the engine is in: its options read once, the wait and the engine alike', async () => {
  const count = (reads, k) => reads.filter((r) => r === k).length;
  const signal = new AbortController().signal;
  for (const method of ['request', 'schema', 'fetch']) {
    const client = createClientSync();
    const opts = logged({ deadlineMs: 5000, signal, timeoutMs: 4000, headers: { 'x-a': '1' } });
    const r = await client[method](`${server.url}/echo?id=early-reads-${method}`, opts.proxy);
    assert.ok(method !== 'schema' || r.source === 'network', `${method}: ${r?.source}`);
    for (const k of ['deadlineMs', 'signal', 'timeoutMs', 'headers']) assert.equal(count(opts.reads, k), 1, `${method}: ${opts.reads}`);
    client.close();
  }
});

test('a call with a beforeError hook: its deadlineMs and signal read once', async () => {
  const client = await createClient({ hooks: { beforeError: [(e) => e] } });
  const count = (reads, k) => reads.filter((r) => r === k).length;
  const signal = new AbortController().signal;
  const req = logged({ deadlineMs: 5000, signal });
  await client.request(`${server.url}/echo?id=error-reads`, req.proxy);
  assert.deepEqual([count(req.reads, 'deadlineMs'), count(req.reads, 'signal')], [1, 1], `${req.reads}`);
  const init = logged({ deadlineMs: 5000, signal });
  await client.fetch(`${server.url}/echo?id=error-reads`, init.proxy);
  assert.deepEqual([count(init.reads, 'deadlineMs'), count(init.reads, 'signal')], [1, 1], `${init.reads}`);
  // The hook still sees the call's error, within its deadline.
  const failing = logged({ deadlineMs: 5000, signal, retry: false });
  const e = await client.request(`${server.url}/status/503?id=error-reads`, failing.proxy).catch((x) => x);
  assert.ok(isStormguardError(e) && e.name === 'HttpError', `${e?.name}`);
  assert.deepEqual([count(failing.reads, 'deadlineMs'), count(failing.reads, 'signal')], [1, 1], `${failing.reads}`);
  client.close();
});

test('on(): an event name of any type is an OptionsError, never a trap; on()/off() pairs leave memory flat', async () => {
  const client = await createClient();
  for (const name of [123, {}, Symbol('s'), undefined, null, ['attempt'], 'nope']) {
    assert.throws(() => client.on(name, () => {}), (e) => e instanceof OptionsError && e.option === 'event', String(name?.toString?.()));
  }
  assert.equal((await client.request(`${server.url}/echo?id=on-types`)).method, 'GET');
  const memory = memoryOf(initSync({ module: new Uint8Array(0) }));
  for (let i = 0; i < 20000; i++) client.on('attempt', () => {})();
  const before = memory.buffer.byteLength;
  for (let i = 0; i < 300000; i++) client.on('attempt', () => {})();
  const grew = memory.buffer.byteLength - before;
  assert.ok(grew < 256 * 1024, `300k on()/off() pairs grew wasm memory by ${grew} bytes`);
  client.close();
});

test('stats().failures counts every caller of a shared GET that ended in an error', async () => {
  const client = await createClient({ retry: false, breaker: false });
  const url = `${server.url}/delay?ms=150&status=500&id=shared-fail`;
  const all = await Promise.allSettled(Array.from({ length: 10 }, () => client.request(url)));
  assert.deepEqual(all.map((r) => r.status), Array(10).fill('rejected'));
  let s = client.stats();
  assert.deepEqual([s.requests, s.attempts, s.deduped, s.failures], [10, 1, 9, 10]);
  // Four of five callers abort; the fifth gets the answer.
  const ok = `${server.url}/delay?ms=150&id=shared-abort`;
  const ctls = Array.from({ length: 4 }, () => new AbortController());
  const calls = [client.request(ok), ...ctls.map((c) => client.request(ok, { signal: c.signal }))];
  setTimeout(() => ctls.forEach((c) => c.abort()), 30);
  const out = await Promise.allSettled(calls);
  assert.deepEqual(out.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'rejected']);
  s = client.stats();
  assert.deepEqual([s.requests, s.attempts, s.deduped, s.failures], [15, 2, 13, 14]);
  client.close();
});

test('100k calls mixing success, failure, timeout and abort leave memory flat', async () => {
  const client = await createClient({
    timeoutMs: 30, retry: { baseDelayMs: 1, maxDelayMs: 2 }, breaker: false, concurrency: { max: 64, queue: 100000 },
  });
  const memory = memoryOf(initSync({ module: new Uint8Array(0) })); // already instantiated: initSync returns its exports
  const paths = ['/echo', '/status/500', '/hang', '/echo?x=1', '/status/404'];
  const round = async (n) => {
    const batch = [];
    for (let i = 0; i < n; i++) {
      const ctl = i % 7 === 0 ? new AbortController() : null;
      const p = client.request(`${server.url}${paths[i % paths.length]}${paths[i % paths.length].includes('?') ? '&' : '?'}id=mem`, { signal: ctl?.signal, retry: i % 3 ? false : undefined })
        .catch((e) => assert.ok(isStormguardError(e), e?.message));
      if (ctl) setTimeout(() => ctl.abort(), 1);
      batch.push(p);
    }
    await Promise.all(batch);
  };
  const total = Number(process.env.STORMGUARD_MEMORY_CALLS ?? 100000);
  const chunk = 2000;
  await round(chunk); // warm-up: allocator and JIT settle
  global.gc?.();
  const wasmBefore = memory.buffer.byteLength;
  const heapBefore = process.memoryUsage().heapUsed;
  for (let done = chunk; done < total; done += chunk) await round(chunk);
  global.gc?.();
  await new Promise((r) => setTimeout(r, 50));
  global.gc?.();
  const wasmAfter = memory.buffer.byteLength;
  const heapAfter = process.memoryUsage().heapUsed;
  const s = client.stats();
  console.log(`memory: ${s.requests} calls; wasm ${wasmBefore} -> ${wasmAfter} bytes; JS heap ${(heapBefore / 1e6).toFixed(1)} -> ${(heapAfter / 1e6).toFixed(1)} MB`);
  assert.equal(s.inFlight, 0);
  assert.equal(s.queued, 0);
  assert.ok(wasmAfter - wasmBefore <= 1 << 20, `wasm memory grew by ${wasmAfter - wasmBefore} bytes`);
  assert.ok(heapAfter - heapBefore < 32e6, `JS heap grew by ${heapAfter - heapBefore} bytes`);
});

test('exactly-once writes: 1000 keyed POSTs with 30 % dropped responses execute once per key', async () => {
  const client = await createClient({
    retry: { baseDelayMs: 1, maxDelayMs: 5 }, budget: false, breaker: false, concurrency: { max: 32, queue: 1000 },
    // The test is about executions per key, not speed: 1000 calls through 32 slots on a machine loaded
    // by a parallel build took longer than the default 20 s deadline, failing hundreds by time alone.
    deadlineMs: 120000,
  });
  const keys = Array.from({ length: 1000 }, (_, i) => `order-${i}-${Math.random().toString(36).slice(2)}`);
  const results = await Promise.all(keys.map((k) =>
    client.request(`${server.url}/drop?p=0.3&id=exactly-once`, { method: 'POST', body: { k }, idempotencyKey: k })
      .then((b) => b, (e) => e)));
  const failed = results.filter((r) => r instanceof Error);
  const { executions, keys: distinct } = await (await fetch(`${server.url}/_executions?id=exactly-once`)).json();
  console.log(`exactly-once: ${keys.length} calls, ${failed.length} failed after retries, ${executions} executions, ${distinct} distinct keys, ${client.stats().retries} retries`);
  assert.equal(executions, distinct, 'one execution per key');
  assert.equal(distinct, keys.length);
  const why = {};
  for (const e of failed) why[`${e.name}${e.phase ? ` ${e.phase}` : ''}`] = (why[`${e.name}${e.phase ? ` ${e.phase}` : ''}`] ?? 0) + 1;
  assert.ok(failed.length <= 5, `${failed.length} calls failed: ${JSON.stringify(why)}`);
  assert.ok(results.filter((r) => !(r instanceof Error)).every((b) => b.key && typeof b.executed === 'number'));

  const noKey = await client.request(`${server.url}/drop?id=exactly-once-nokey`, { method: 'POST', body: {} }).catch((e) => e);
  assert.equal(noKey.name, 'NetworkError');
  assert.equal(noKey.retryDenied, 'method');
  assert.equal((await (await fetch(`${server.url}/_executions?id=exactly-once-nokey`)).json()).executions, 1);
});
