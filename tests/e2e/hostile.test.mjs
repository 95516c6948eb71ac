// Hostile hosts (README, "Threat model"), through the package's
// Node build: fetch stand-ins that return no Response, a Web Lock that
// answers late, error bodies that stall, close() from inside a call, error
// bodies cut inside a surrogate pair, and many calls on one signal. Each
// test failed before its fix (issue 14, items 1, 2, 3, 10, 11, 12).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

const realFetch = globalThis.fetch;
const count = async (id) => (await (await realFetch(`${server.url}/_stats?id=${id}`)).json()).count;
const settled = (p) => p.then((v) => ({ v }), (e) => ({ e }));
const withFetch = async (stand_in, body) => {
  globalThis.fetch = stand_in;
  try {
    return await body();
  } finally {
    globalThis.fetch = realFetch;
  }
};

const STAND_INS = {
  'returns undefined (a bare jest.fn())': () => undefined,
  'resolves undefined': async () => undefined,
  'resolves a node-fetch style 500 (no getReader)': async () => ({
    status: 500, headers: new Headers(), body: { pipe() {}, on() {} }, text: async () => 'x',
  }),
  'resolves an object whose status getter throws': async () => ({ get status() { throw new Error('trap'); } }),
  'resolves a 200 whose text() throws': async () => ({ status: 200, headers: new Headers(), text() { throw new Error('trap'); } }),
  'resolves a 200 whose text() gives a number': async () => ({ status: 200, text: async () => 42 }),
  'is a throwing getter': undefined,
};

test('hostile fetch stand-ins: each attempt fails with NetworkError (cause a TypeError or the throw), no hang, no trap, slots freed', async () => {
  const client = await createClient({ concurrency: { max: 2, queue: 10 }, breaker: false, budget: false, retry: { maxAttempts: 2, baseDelayMs: 1 } });
  for (const [name, stand_in] of Object.entries(STAND_INS)) {
    const install = stand_in ?? (() => { throw new Error('no fetch'); });
    const outcomes = await withFetch(install, async () => {
      if (!stand_in) Object.defineProperty(globalThis, 'fetch', { configurable: true, get() { throw new TypeError('fetch getter trap'); } });
      try {
        const calls = [0, 1, 2].map(() => settled(client.request(`${server.url}/echo`, { timeoutMs: 200, deadlineMs: 500 })));
        return await Promise.all(calls);
      } finally {
        if (!stand_in) Object.defineProperty(globalThis, 'fetch', { configurable: true, writable: true, value: realFetch });
      }
    });
    for (const { e } of outcomes) {
      assert.equal(e?.name, 'NetworkError', `${name}: ${e?.name} ${e?.message}`);
      assert.ok(e.cause instanceof Error, `${name}: cause ${e.cause}`);
      assert.equal(e.attempts, 2, `${name}: retried like any network error`);
    }
    assert.equal(client.stats().inFlight, 0, `${name}: slot freed`);
  }
  // The module still works with the real fetch afterwards.
  assert.equal((await client.request(`${server.url}/echo`)).method, 'GET');
});

test('a stand-in that never settles still ends by timeout, deadline, abort and close()', async () => {
  const never = () => new Promise(() => {});
  await withFetch(never, async () => {
    const client = await createClient({ breaker: false, retry: false, concurrency: { max: 2, queue: 10 } });
    const t0 = performance.now();
    const timeout = await settled(client.request(`${server.url}/echo`, { timeoutMs: 100 }));
    assert.equal(timeout.e?.name, 'TimeoutError');
    assert.equal(timeout.e.phase, 'attempt');
    const deadline = await settled(client.request(`${server.url}/echo`, { timeoutMs: 1000, deadlineMs: 150 }));
    assert.equal(deadline.e?.name, 'TimeoutError');
    assert.equal(deadline.e.phase, 'deadline');
    const ctl = new AbortController();
    setTimeout(() => ctl.abort('stop'), 50);
    const aborted = await settled(client.request(`${server.url}/echo`, { timeoutMs: 5000, signal: ctl.signal }));
    assert.equal(aborted.e?.name, 'AbortError');
    assert.equal(aborted.e.reason, 'stop');
    assert.ok(performance.now() - t0 < 2000, 'nothing waited for the never-settling fetch');
    assert.equal(client.stats().inFlight, 0);
    const closing = settled(client.request(`${server.url}/echo`, { timeoutMs: 5000 }));
    setTimeout(() => client.close(), 50);
    const closed = await closing;
    assert.equal(closed.e?.name, 'AbortError');
    assert.equal(closed.e.reason, 'client closed');
  });
});

test('a stand-in returning a usable object works: request() reads its status and text()', async () => {
  const body = await withFetch(async () => ({ status: 200, text: async () => '{"a":1}' }), async () => {
    const client = await createClient();
    return client.request('http://127.0.0.1:1/x');
  });
  assert.deepEqual(body, { a: 1 });
});

test('the half-open probe lock wait ends on abort and deadline, not when the lock answers (4 s)', async () => {
  const late = {
    locks: {
      request: (name, opts, cb) => new Promise((resolve) => setTimeout(() => resolve(cb({ name })), 4000)),
    },
  };
  const hadNavigator = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  Object.defineProperty(globalThis, 'navigator', { configurable: true, value: late });
  try {
    const client = await createClient({
      crossTab: true, retry: false, breaker: { consecutiveFailures: 1, openMs: 50, maxOpenMs: 50 },
    });
    const url = `${server.url}/status/503?id=probe-lock`;
    await settled(client.request(url));
    assert.equal(client.breakers()[0].state, 'open');
    await new Promise((r) => setTimeout(r, 80));
    const ctl = new AbortController();
    setTimeout(() => ctl.abort('gone'), 200);
    let t0 = performance.now();
    const aborted = await settled(client.request(url, { deadlineMs: 500, signal: ctl.signal }));
    const abortMs = performance.now() - t0;
    assert.equal(aborted.e?.name, 'AbortError');
    assert.ok(abortMs < 1000, `aborted call settled after ${abortMs} ms`);
    t0 = performance.now();
    const timedOut = await settled(client.request(url, { deadlineMs: 300 }));
    const deadlineMs = performance.now() - t0;
    assert.equal(timedOut.e?.name, 'TimeoutError');
    assert.equal(timedOut.e.phase, 'deadline');
    assert.ok(deadlineMs < 1000, `deadline call settled after ${deadlineMs} ms`);
    assert.equal(await count('probe-lock'), 1, 'no probe was sent');
    client.close();
  } finally {
    if (hadNavigator) Object.defineProperty(globalThis, 'navigator', hadNavigator);
    else delete globalThis.navigator;
  }
});

test('a stalled error body ends in HttpError with what arrived, never a TimeoutError; a 404 is sent once', async () => {
  const client = await createClient({ retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: false });
  // 100 bytes, then the server waits 10 s before the next chunk.
  const stalled = (status, id) => `${server.url}/body?bytes=5000&status=${status}&chunk=100&interval=10000&id=${id}`;
  const t0 = performance.now();
  const r404 = await settled(client.request(stalled(404, 'stall-404'), { timeoutMs: 300 }));
  assert.equal(r404.e?.name, 'HttpError', `${r404.e?.name}: ${r404.e?.message}`);
  assert.equal(r404.e.status, 404);
  assert.equal(r404.e.body, 'x'.repeat(100));
  assert.equal(r404.e.retryDenied, 'status');
  assert.ok(performance.now() - t0 < 2000);
  assert.equal(await count('stall-404'), 1, 'a 404 is never retried');
  const b404 = client.breakers().find((b) => b.key.includes('/body'));
  assert.equal(b404.failureRate, 0, 'a 404 is no breaker failure');

  const r500 = await settled(client.request(stalled(500, 'stall-500'), { timeoutMs: 300, retry: { maxAttempts: 2, baseDelayMs: 1 } }));
  assert.equal(r500.e?.name, 'HttpError');
  assert.equal(r500.e.status, 500);
  assert.equal(r500.e.body, 'x'.repeat(100));
  assert.equal(r500.e.retryDenied, 'attempts');
  assert.equal(client.stats().timeouts, 0, 'no attempt counted as a timeout');
});

test('an error body cut at 1024 UTF-16 units never ends in a lone surrogate', async () => {
  const client = await createClient({ retry: false });
  const text = 'a'.repeat(1023) + '\u{1F600}' + 'b'.repeat(10);
  const e = await client.request(`${server.url}/status/400?body=${encodeURIComponent(text)}`).catch((x) => x);
  assert.equal(e.name, 'HttpError');
  assert.equal(e.body, 'a'.repeat(1023));
  const whole = 'a'.repeat(1022) + '\u{1F600}' + 'b';
  const f = await client.request(`${server.url}/status/400?body=${encodeURIComponent(whole)}`).catch((x) => x);
  assert.equal(f.body, whole.slice(0, 1024), 'a pair that fits is kept');
});

test('close() from inside an option getter: that call rejects AbortError, no wasm-bindgen message', async () => {
  const client = await createClient();
  const e = await client.request(`${server.url}/echo`, {
    get timeoutMs() {
      client.close();
      return 100;
    },
  }).catch((x) => x);
  assert.equal(e.name, 'AbortError', `${e.name}: ${e.message}`);
  assert.equal(e.reason, 'client closed');
  const later = await client.fetch(`${server.url}/echo`).catch((x) => x);
  assert.equal(later.name, 'AbortError');
  assert.doesNotMatch(String(e.message) + String(later.message), /borrow|ownership|Rust/);
  assert.equal(client.stats().inFlight, 0);
});

test('50 calls sharing one signal add one listener to it: no MaxListenersExceededWarning; abort reaches all', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    const client = await createClient({ concurrency: { max: 64, queue: 100 } });
    const ctl = new AbortController();
    const distinct = Array.from({ length: 25 }, (_, i) => client.request(`${server.url}/hang?i=${i}`, { signal: ctl.signal }));
    const shared = Array.from({ length: 25 }, () => client.request(`${server.url}/hang?shared=1`, { signal: ctl.signal }));
    const fetches = Array.from({ length: 12 }, (_, i) => client.fetch(`${server.url}/hang?f=${i}`, { signal: ctl.signal }));
    await new Promise((r) => setTimeout(r, 100));
    ctl.abort('enough');
    const all = await Promise.all([...distinct, ...shared].map(settled));
    assert.ok(all.every(({ e }) => e?.name === 'AbortError' && e.reason === 'enough'));
    // fetch() rejects with the reason itself, as the host's fetch does.
    assert.ok((await Promise.all(fetches.map(settled))).every(({ e }) => e === 'enough'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings.filter((n) => n === 'MaxListenersExceededWarning'), []);
    assert.equal(client.stats().inFlight, 0);
    // A signal that outlives its calls keeps no listener from them.
    const keep = new AbortController();
    for (let i = 0; i < 20; i++) await client.request(`${server.url}/echo?k=${i}`, { signal: keep.signal });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings.filter((n) => n === 'MaxListenersExceededWarning'), []);
  } finally {
    process.off('warning', onWarning);
  }
});

// Issue 27 item 7: with performance.now frozen or running backwards (test
// stubs do this), a call to a backend that never answers never ended: its
// attempt's alarm re-armed itself and never found itself due. Timeouts and
// deadlines fire on the host's timers whatever performance.now says.
test('performance.now frozen, running backwards or throwing: a call to /hang still ends by its timeout and deadline', async () => {
  const stubs = {
    // Node's own fetch (and this file's fault server) read performance.now
    // too, and would throw: this one's backend is a fetch stand-in that
    // never answers, and it runs first, before the server has any socket
    // whose closing it would time.
    throwing: () => () => { throw new Error('no clock'); },
    frozen: () => () => 1234.5,
    backwards: () => { let t = 1e6; return () => (t -= 1); },
  };
  for (const [name, make] of Object.entries(stubs)) {
    const client = await createClient({ breaker: false, crossTab: false, budget: false });
    const calls = [];
    if (name === 'throwing') globalThis.fetch = () => new Promise(() => {});
    performance.now = make();
    try {
      const t0 = Date.now();
      const hung = new Promise((r) => setTimeout(() => r({ hung: true }), 8000).unref());
      const result = await Promise.race([
        settled(client.request(`${server.url}/hang?id=clock-${name}`, { timeoutMs: 300, deadlineMs: 1000 })),
        hung,
      ]);
      calls.push(Date.now() - t0);
      assert.ok(!result.hung, `${name}: the call had not ended after 8 s`);
      assert.equal(result.e?.name, 'TimeoutError', `${name}: ${result.e?.name} ${result.e?.message}`);
      // Deadline 1000 ms, plus a generous margin for a busy machine.
      assert.ok(calls[0] < 2500, `${name}: ended after ${calls[0]} ms`);
      const attempts = name === 'throwing' ? client.stats().attempts : await count(`clock-${name}`);
      assert.ok(attempts >= 1 && attempts <= 3, `${name}: ${attempts} attempts`);
    } finally {
      delete performance.now;
      globalThis.fetch = realFetch;
      client.close();
    }
    console.log(`performance.now ${name}: the call ended after ${calls[0]} ms`);
  }
});
