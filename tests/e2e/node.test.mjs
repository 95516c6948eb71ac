// The package's Node build (pkg/node.js, what the `node` export condition
// picks) making real calls to the fault server from Node 20.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, HttpError, TimeoutError, isStormguardError } from '../../pkg/node.js';

let server;
before(async () => {
  // A second port: another origin, for where a token goes.
  server = await startServer({ extraPorts: 1 });
});
after(() => server?.close());

const log = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

test('GET with retries in Node', async () => {
  const client = await createClient({ retry: { baseDelayMs: 5 } });
  const body = await client.request(`${server.url}/fail-first?n=2&id=node-retry`);
  assert.equal(body.attempt, 3);
  assert.equal((await log('node-retry')).length, 3);
  assert.equal(client.stats().retries, 2);
});

test('an attempt timeout aborts the request in Node too', async () => {
  const client = await createClient({ timeoutMs: 200, retry: false });
  await assert.rejects(client.request(`${server.url}/hang?id=node-hang`), (e) => {
    assert.ok(e instanceof TimeoutError);
    assert.equal(e.phase, 'attempt');
    return true;
  });
  await new Promise((r) => setTimeout(r, 100));
  const [entry] = await log('node-hang');
  assert.ok(entry.closedAt !== null, 'the server saw the connection closed');
});

test('HttpError fields and fetch() drop-in in Node', async () => {
  const client = await createClient({ retry: false });
  await assert.rejects(client.request(`${server.url}/status/404?id=node-404`), (e) => {
    assert.ok(e instanceof HttpError && isStormguardError(e));
    assert.equal(e.status, 404);
    assert.equal(e.retryDenied, 'status');
    return true;
  });
  const res = await client.fetch(`${server.url}/status/404?id=node-404`);
  assert.equal(res.status, 404, 'fetch() resolves whatever the status');
});

test("breaker: 3 failures in a row (a page's default; given here, as a server's is false) open it for 2 s; consecutiveFailures false leaves it to the rate", async () => {
  const { CircuitOpenError, OptionsError } = await import('../../pkg/node.js');
  const url = `${server.url}/status/503?id=node-breaker-defaults`;
  const client = await createClient({ retry: false, breaker: { consecutiveFailures: 3 } });
  for (let i = 0; i < 3; i++) await assert.rejects(client.request(url), HttpError);
  const [b] = client.breakers();
  assert.equal(b.state, 'open', 'open after the third failure in a row, well under minSamples (10)');
  assert.ok(b.openForMs > 1000 && b.openForMs <= 2000, `open for ${b.openForMs} ms`);
  await assert.rejects(client.request(url), (e) => {
    assert.ok(e instanceof CircuitOpenError);
    assert.ok(e.retryInMs > 0 && e.retryInMs <= 2000, `retryInMs ${e.retryInMs}`);
    return true;
  });
  assert.equal((await log('node-breaker-defaults')).length, 3, 'the rejected call sent nothing');

  const off = await createClient({ retry: false, breaker: { consecutiveFailures: false } });
  for (let i = 0; i < 9; i++) await assert.rejects(off.request(url), HttpError);
  assert.equal(off.breakers()[0].state, 'closed', 'nine failures: under minSamples, and no run rule');
  await assert.rejects(off.request(url), HttpError);
  assert.equal(off.breakers()[0].state, 'open', 'the tenth sample opens it by the failure rate');

  for (const bad of [true, '3', 0, 2.5]) {
    await assert.rejects(createClient({ breaker: { consecutiveFailures: bad } }), (e) => {
      assert.ok(e instanceof OptionsError, String(bad));
      assert.equal(e.option, 'breaker.consecutiveFailures');
      return true;
    });
  }
});

test('an endpoint failing alone is retried: its own breaker counts its own row', async () => {
  // (A page load's burst over several endpoints: tests/e2e/blip.test.mjs.)
  // consecutiveFailures: 3, a page's default (a server's is false: tests/e2e/server-defaults.test.mjs).
  const id = 'node-page-outage';
  // One endpoint failing after another kept failing is that endpoint's failure: it is retried.
  const alone = await createClient({ retry: { baseDelayMs: 5 }, breaker: { consecutiveFailures: 3 } });
  await assert.rejects(alone.request(`${server.url}/status/503?id=${id}-alone`), HttpError);
  assert.equal((await log(`${id}-alone`)).length, 3, 'three attempts, and its breaker opens');
  const body = await alone.request(`${server.url}/fail-first?n=1&id=${id}-alone`);
  assert.equal(body.attempt, 2);
});

test('a finished call keeps no Node process alive (attempt and breaker timers are unref\'d)', async () => {
  const { execFile } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const entry = fileURLToPath(new URL('../../pkg/node.js', import.meta.url));
  // One call with a 60 s attempt timeout, and one that opens a breaker for 60 s (its
  // half-open timer is set): the process must exit as soon as they are answered.
  const script = `const { createClient } = await import(${JSON.stringify(entry)});
    const c = await createClient({ timeoutMs: 60000, deadlineMs: 120000 });
    await c.request(${JSON.stringify(`${server.url}/echo?id=node-exit`)});
    const b = await createClient({ retry: false, breaker: { consecutiveFailures: 1, openMs: 60000, maxOpenMs: 60000 } });
    await b.request(${JSON.stringify(`${server.url}/status/503?id=node-exit`)}).catch(() => {});
    if (b.breakers()[0]?.state !== 'open') throw new Error('the breaker did not open');`;
  const t0 = Date.now();
  await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 30000 }, (err) => (err ? reject(err) : resolve()));
  });
  const took = Date.now() - t0;
  assert.ok(took < 20000, `the process lived ${took} ms after one call`);
  assert.equal((await log('node-exit')).length, 2);
});

test('jitter comes from crypto.getRandomValues', async () => {
  const { execFile } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const entry = fileURLToPath(new URL('../../pkg/node.js', import.meta.url));
  // crypto answering all ones makes full jitter pick the top of its range: the
  // first retry waits (almost) all of baseDelayMs. Any other source would not.
  const script = `let draws = 0;
    crypto.getRandomValues = (a) => { draws += 1; a.fill(255); return a; };
    const { createClient } = await import(${JSON.stringify(entry)});
    const c = await createClient({ retry: { baseDelayMs: 200, maxAttempts: 2 } });
    const delays = [];
    c.on('retry', (e) => delays.push(e.delayMs));
    await c.request(${JSON.stringify(`${server.url}/fail-first?n=1&id=node-crypto`)});
    process.stdout.write(JSON.stringify({ draws, delays }));`;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 30000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
  const { draws, delays } = JSON.parse(out);
  assert.ok(draws >= 1, 'crypto.getRandomValues was used');
  assert.equal(delays.length, 1);
  assert.ok(delays[0] > 199.9 && delays[0] <= 200, `delay ${delays[0]}`);
});

test('fetch is the global one at call time, called with no wasm frame on its stack', async () => {
  const client = await createClient({ retry: false });
  const realFetch = globalThis.fetch;
  const seen = [];
  // Installed after the client exists, as a test's fetch mock would be.
  globalThis.fetch = function (input, init) {
    seen.push({ input: String(input), stack: new Error().stack, signal: init?.signal });
    return realFetch(input, init);
  };
  try {
    assert.deepEqual(await client.request(`${server.url}/json?id=node-spy&body=${encodeURIComponent('{"ok":true}')}`), { ok: true });
    assert.equal(seen.length, 1);
    assert.match(seen[0].input, /\/json\?id=node-spy&/);
    assert.ok(seen[0].signal instanceof AbortSignal, 'each attempt carries its own signal');
    assert.doesNotMatch(seen[0].stack, /wasm-function|wasm:\/\//, 'fetch runs on a clean stack');
    // A host without fetch: a NetworkError naming it, not a crash.
    globalThis.fetch = undefined;
    await assert.rejects(client.request(`${server.url}/json?id=node-nofetch`), (e) => {
      assert.equal(e.name, 'NetworkError');
      assert.match(String(e.cause?.message ?? e.cause), /fetch is not available/);
      return true;
    });
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('an ordinary call throws no JS exception on its way (each one costs a call 25-30 µs)', async () => {
  // Every exception V8 sees, caught or not, pauses the inspector: a Reflect.get
  // on undefined (fetch.rs, validate.rs) once threw and was swallowed on every
  // attempt, the most expensive single step of a call.
  const { Session } = await import('node:inspector');
  const json = () => new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } });
  const realFetch = globalThis.fetch;
  const cases = [
    ['a default GET', {}, (c) => c.request('http://127.0.0.1:9/a?x=1')],
    ['a POST with a JSON body and a query', {}, (c) => c.request('http://127.0.0.1:9/a', { method: 'POST', body: { a: 1 }, query: { q: 2 } })],
    ['a predicate validate', {}, (c) => c.request('http://127.0.0.1:9/a', { validate: (v) => v.ok === true })],
    ['a Standard Schema validate', {}, (c) => c.request('http://127.0.0.1:9/a', {
      validate: { '~standard': { version: 1, vendor: 't', validate: (value) => ({ value }) } },
    })],
    ['the fetch option', { fetch: async () => json() }, (c) => c.request('http://127.0.0.1:9/a')],
    ['headers as a function and auth.token', { headers: () => ({ 'x-a': '1' }), auth: { token: () => 't', origins: ['http://127.0.0.1:9'] } }, (c) => c.request('http://127.0.0.1:9/a')],
    ['hooks', { hooks: { beforeRequest: [() => {}], afterResponse: [() => {}] } }, (c) => c.request('http://127.0.0.1:9/a')],
    ['client.fetch', {}, async (c) => (await c.fetch('http://127.0.0.1:9/a')).json()],
  ];
  globalThis.fetch = async () => json();
  const session = new Session();
  session.connect();
  try {
    for (const [name, options, call] of cases) {
      const client = await createClient(options);
      await call(client); // first calls make what a realm keeps
      const thrown = [];
      session.on('Debugger.paused', function paused(m) {
        const frame = m.params.callFrames[0];
        thrown.push(`${m.params.data?.description?.split('\n')[0]} in ${frame?.functionName || '(anonymous)'} ${frame?.url ?? ''}`);
        session.post('Debugger.resume');
      });
      session.post('Debugger.enable');
      session.post('Debugger.setPauseOnExceptions', { state: 'all' });
      for (let i = 0; i < 3; i++) assert.deepEqual(await call(client), { ok: true });
      session.post('Debugger.setPauseOnExceptions', { state: 'none' });
      session.removeAllListeners('Debugger.paused');
      assert.deepEqual(thrown, [], `${name}: exceptions thrown inside its calls`);
      client.close();
    }
  } finally {
    session.disconnect();
    globalThis.fetch = realFetch;
  }
});

test('dedupe identity holds the call\'s headers: names and values, not their order or case', async () => {
  const realFetch = globalThis.fetch;
  let sent = 0;
  globalThis.fetch = async () => {
    sent++;
    await new Promise((r) => setTimeout(r, 20));
    return new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } });
  };
  try {
    const client = await createClient({});
    const twice = async (a, b) => {
      sent = 0;
      await Promise.all([client.request('http://127.0.0.1:9/d', { headers: a }), client.request('http://127.0.0.1:9/d', { headers: b })]);
      return sent;
    };
    assert.equal(await twice({ 'x-a': '1', 'x-b': '2' }, { 'X-B': '2', 'x-a': '1' }), 1, 'same fields, other order and case: joined');
    assert.equal(await twice({ 'x-a': '1' }, { 'x-a': '2' }), 2, 'another value: its own request');
    assert.equal(await twice({ 'x-a': '1' }, { 'x-a': '1', 'x-c': '' }), 2, 'one more field, even empty: its own request');
    assert.equal(await twice(undefined, {}), 1, 'no headers and an empty record: joined');
    client.close();
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('request building: keys, record shapes, fragments, method case, option names', async () => {
  const { OptionsError } = await import('../../pkg/node.js');
  const client = await createClient({ retry: { baseDelayMs: 5 }, headers: new Headers({ 'x-client': 'c' }) });
  // A key that cannot be a header value is refused, not silently dropped.
  await assert.rejects(client.request(`${server.url}/echo?id=rb-key`, { method: 'POST', idempotencyKey: 'ключ-1' }), (e) => {
    assert.ok(e instanceof OptionsError);
    assert.equal(e.option, 'idempotencyKey');
    return true;
  });
  assert.equal((await log('rb-key')).length, 0);
  // A key set as a header makes a POST retryable like the option does.
  const r = await client.request(`${server.url}/fail-first?n=1&key=rb&id=rb-hand`, {
    method: 'POST', headers: { 'Idempotency-Key': 'hand-1' },
  });
  assert.equal(r.attempt, 2);
  assert.deepEqual((await log('rb-hand')).map((e) => e.idempotencyKey), ['hand-1', 'hand-1']);
  // Headers, Map and URLSearchParams are read, not taken as empty objects.
  const echoed = await client.request(`${server.url}/echo?id=rb-shapes`, {
    headers: new Map([['x-call', 'm']]), query: new URLSearchParams({ page: '2' }),
  });
  assert.equal(echoed.headers['x-client'], 'c');
  assert.equal(echoed.headers['x-call'], 'm');
  assert.equal(echoed.query.page, '2');
  const repeated = await client.request(`${server.url}/echo?t=0&id=rb-shapes`, { query: new URLSearchParams([['t', '1'], ['t', '2']]) });
  assert.match(repeated.search, /t=1&t=2/);
  assert.doesNotMatch(repeated.search, /t=0/);
  // A key is 1-255 printable ASCII, not blank (README, "idempotencyKey"): outer spaces are trimmed on the wire as fetch
  // trims every header's; a blank key and `false` (not a string or true) reject.
  await client.request(`${server.url}/echo?id=rb-pad`, { method: 'POST', idempotencyKey: ' padded ' });
  assert.deepEqual((await log('rb-pad')).map((e) => e.idempotencyKey), ['padded']);
  for (const idempotencyKey of ['   ', false]) {
    await assert.rejects(client.request(`${server.url}/echo?id=rb-key`, { method: 'POST', idempotencyKey }), (e) => e.option === 'idempotencyKey');
  }
  // The fragment is never sent: these are one request.
  const u = `${server.url}/delay?ms=100&id=rb-frag`;
  await Promise.all([client.request(`${u}#a`), client.request(`${u}#b`), client.request(u)]);
  assert.equal((await log('rb-frag')).length, 1);
  // fetch() names init's options as request() does, and keys 'patch' as PATCH.
  await assert.rejects(client.fetch(`${server.url}/echo?id=rb-name`, { timeoutMs: 'x' }), (e) => e.option === 'timeoutMs');
  await client.fetch(`${server.url}/echo?id=rb-patch`, { method: 'patch' });
  const keys = client.breakers().map((b) => b.key);
  assert.ok(keys.includes(`PATCH ${server.url}/echo`), keys.join(', '));
  // A data: URL is keyed by its scheme, not by its payload.
  assert.deepEqual(await client.request('data:application/json,{"a":1}'), { a: 1 });
  assert.ok(client.breakers().some((b) => b.key === 'GET data:'));
});

test('the hooks\' signal fallback (no AbortSignal.any) leaves no listener behind', async () => {
  const { getEventListeners } = await import('node:events');
  const { anySignal } = await import('../../pkg/core.js');
  const any = AbortSignal.any;
  try {
    delete AbortSignal.any; // a host without it (Safari < 17.4, Chrome < 116)
    const long = new AbortController(); // an app-wide signal, passed to every call
    for (let i = 0; i < 3; i++) {
      const { signal, done } = anySignal([new AbortController().signal, long.signal]);
      assert.equal(signal.aborted, false);
      done();
    }
    assert.equal(getEventListeners(long.signal, 'abort').length, 0);
    const mine = new AbortController();
    const { signal } = anySignal([mine.signal, long.signal]);
    mine.abort('why');
    assert.equal(signal.reason, 'why', 'it still aborts with a source');
  } finally {
    AbortSignal.any = any;
  }
});

/** [key, typeof value] pairs, in order: the exact shape JS sees. */
const shape = (o) => Object.entries(o).map(([k, v]) => [k, typeof v]);
const call = (...fields) => [['type', 'string'], ['requestId', 'string'], ['method', 'string'], ['url', 'string'],
  ['attempt', 'number'], ...fields];

test('stats(), breakers() and events: exact keys in order, numbers (never BigInt), no undefined fields', async () => {
  // consecutiveFailures: 3 (a page's default) for the breaker event below.
  const client = await createClient({ timeoutMs: 150, retry: { baseDelayMs: 5, maxAttempts: 2 }, breaker: { consecutiveFailures: 3 } });
  const seen = {};
  for (const name of ['attempt', 'retry', 'timeout', 'giveUp', 'breaker']) {
    seen[name] = [];
    client.on(name, (e) => seen[name].push(e));
  }
  const url = `${server.url}/status/503?id=node-shapes`;
  // 503, retry, 503: giveUp; then a third 503 in a row opens the breaker.
  await assert.rejects(client.request(url), HttpError);
  await assert.rejects(client.request(url));
  await assert.rejects(client.request(`${server.url}/hang?id=node-shapes-hang`, { retry: false }), TimeoutError);

  assert.deepEqual(shape(client.stats()), [
    'requests', 'attempts', 'retries', 'timeouts', 'failures', 'breakerOpens', 'budgetDenied', 'queueRejected',
    'deduped', 'fallbacks', 'inFlight', 'queued', 'amplification',
  ].map((k) => [k, 'number']));
  const stats = client.stats();
  assert.equal(stats.requests, 3);
  assert.equal(stats.amplification, stats.attempts / 3);

  const breakers = client.breakers();
  assert.equal(breakers.length, 2, 'one for /status/503, one for /hang');
  for (const b of breakers) {
    assert.deepEqual(shape(b), [['key', 'string'], ['state', 'string'], ['samples', 'number'],
      ['failureRate', 'number'], ['openForMs', 'number']]);
  }
  assert.ok(breakers.some((b) => b.state === 'open'), JSON.stringify(breakers));

  assert.deepEqual(shape(seen.attempt[0]), call(['elapsedMs', 'number'], ['remainingMs', 'number']));
  assert.deepEqual(shape(seen.retry[0]), call(['delayMs', 'number'], ['errorName', 'string'], ['status', 'number']));
  assert.deepEqual(shape(seen.giveUp[0]), call(['elapsedMs', 'number'], ['errorName', 'string'], ['status', 'number']));
  const timeout = seen.timeout.at(-1);
  assert.deepEqual(shape(timeout), call(['elapsedMs', 'number']));
  assert.deepEqual(shape(seen.giveUp.at(-1)), call(['elapsedMs', 'number'], ['errorName', 'string']),
    'a TimeoutError gives up without a status field');
  const [opened] = seen.breaker;
  assert.deepEqual(shape(opened), [['type', 'string'], ['requestId', 'string'], ['key', 'string'],
    ['from', 'string'], ['to', 'string']]);
  assert.deepEqual([opened.type, opened.from, opened.to], ['breaker', 'closed', 'open']);
  assert.equal(seen.retry[0].status, 503);
  assert.equal(seen.attempt[0].attempt, 1);
  client.close();
});

test('auth on a server: a derived client per user, the token read per attempt, one refresh per user on 401', async () => {
  const api = await createClient({ baseUrl: `${server.url}/`, retry: false });
  const sessions = { alice: 'a-old', bob: 'b-1' };
  const refreshed = { alice: 0, bob: 0 };
  const forUser = (user) => api.extend({
    auth: {
      token: async () => sessions[user],
      refresh: async () => {
        refreshed[user]++;
        await new Promise((r) => setTimeout(r, 50));
        sessions[user] = `${user[0]}-new`;
      },
    },
  });
  const alice = forUser('alice');
  const bob = forUser('bob');
  const [a1, a2, b] = await Promise.all([
    alice.request('auth?accept=a-new&delay=50&id=node-auth&n=1'),
    alice.request('auth?accept=a-new&delay=50&id=node-auth&n=2'),
    bob.request('auth?accept=b-1&id=node-auth-bob'),
  ]);
  assert.deepEqual([a1.token, a2.token, b.token], ['a-new', 'a-new', 'b-1']);
  assert.deepEqual(refreshed, { alice: 1, bob: 0 }, "one refresh for alice's two 401s, none for bob");
  assert.equal((await log('node-auth')).length, 4);
  assert.equal(api.stats().retries, 0, 'a replay is no retry');
  // A refresh that throws: the 401, with what it threw as cause.
  const broken = api.extend({ auth: { token: () => 'x', refresh: () => { throw new Error('no session'); } } });
  await assert.rejects(broken.request('auth?accept=y&id=node-auth-broken'), (e) => {
    assert.ok(e instanceof HttpError);
    assert.equal(e.status, 401);
    assert.equal(e.cause?.message, 'no session');
    return true;
  });
  // A token that rejects: OptionsError('auth'), nothing sent.
  const vault = api.extend({ auth: { token: () => Promise.reject(new Error('vault')) } });
  await assert.rejects(vault.request('auth?accept=y&id=node-auth-vault'), (e) => e.name === 'OptionsError' && e.option === 'auth');
  assert.equal((await log('node-auth-vault')).length, 0);
  assert.equal(api.stats().inFlight, 0);
  api.close();
});

test('close() ends a call whose async Standard Schema is still answering, at once, as it ends the others', async () => {
  const client = await createClient({ retry: false });
  let asked = 0;
  const never = { '~standard': { version: 1, vendor: 'test', validate: () => (asked++, new Promise(() => {})) } };
  const pending = client.request(`${server.url}/json?body=${encodeURIComponent('{"a":1}')}&id=node-close-validate`, {
    validate: never,
    deadlineMs: 10_000,
  });
  const outcome = pending.then(() => 'resolved', (e) => e);
  while (asked === 0) await new Promise((r) => setTimeout(r, 10));
  client.close();
  const e = await Promise.race([outcome, new Promise((r) => setTimeout(() => r('still pending 1 s after close()'), 1000))]);
  assert.equal(e?.name, 'AbortError', String(e));
  assert.equal(e.reason, 'client closed');
});

test("'attempt' events are the attempts sent: none for one whose beforeRequest hook throws, as stats() and the error count", async () => {
  let n = 0;
  const client = await createClient({
    retry: { baseDelayMs: 1 },
    hooks: { beforeRequest: () => { if (++n === 2) throw new Error('hook bug'); } },
  });
  const events = [];
  client.on('attempt', (e) => events.push(e.attempt));
  // The first attempt is sent (503), the second one's hook throws: the call ends, one attempt sent.
  const e = await client.request(`${server.url}/fail-first?n=5&id=node-hook-attempt`).catch((x) => x);
  assert.equal(e.name, 'OptionsError');
  assert.equal(e.option, 'hooks');
  assert.equal((await log('node-hook-attempt')).length, 1);
  assert.equal(client.stats().attempts, 1);
  assert.equal(client.stats().retries, 0, 'the retry whose hook threw was never sent');
  assert.deepEqual(events, [1], "an 'attempt' event for the attempt sent only");
  client.close();
});

test('auth: the token goes to baseUrl\'s origin and auth.origins only; without either in Node, createClient rejects', async () => {
  const { OptionsError } = await import('../../pkg/node.js');
  const other = server.urls[1];
  // Without baseUrl or auth.origins there is no origin the token may go to: OptionsError('auth')
  // naming both, from createClient and from extend.
  const refusedToken = await createClient({ auth: { token: () => 'secret' } }).catch((e) => e);
  assert.ok(refusedToken instanceof OptionsError, String(refusedToken));
  assert.equal(refusedToken.option, 'auth');
  assert.match(refusedToken.message, /baseUrl/);
  assert.match(refusedToken.message, /auth\.origins/);
  const bare = await createClient({ crossTab: false });
  assert.throws(() => bare.extend({ auth: { token: () => 'secret' } }), (e) => e instanceof OptionsError && e.option === 'auth');
  // Entries that are no origin: refused by their index, never repeated.
  for (const [origins, option] of [
    ['https://api.example.com', 'auth.origins'], [['https://api.example.com/v1'], 'auth.origins[0]'],
    [['*', 'https://u:hunter2@api.example.com'], 'auth.origins[1]'], [[42], 'auth.origins[0]'],
    [['api.example.com'], 'auth.origins[0]'], [['https://api.example.com?x=1'], 'auth.origins[0]'],
    [['https://*.example.com'], 'auth.origins[0]'],
  ]) {
    const e = await createClient({ auth: { token: () => 't', origins } }).catch((x) => x);
    assert.ok(e instanceof OptionsError && e.option === option, `${JSON.stringify(origins)}: ${e}`);
    assert.doesNotMatch(e.message, /hunter2/);
  }

  let refreshes = 0;
  const api = await createClient({
    baseUrl: `${server.url}/v1/`, retry: false, crossTab: false,
    auth: { token: () => 'secret', refresh: () => { refreshes++; } },
  });
  const auth = async (c, url, init) => (await c.request(url, init)).headers.authorization ?? null;
  assert.equal(await auth(api, `${server.url}/echo?id=home`), '<redacted>', 'to its own origin');
  assert.equal(await auth(api, `${other}/echo?id=away`), null, 'not to another origin');
  assert.equal(await auth(api, `${other}/echo?id=away`, { method: 'POST', body: { a: 1 } }), null, 'nor a POST to it');
  const fetched = await (await api.fetch(`${other}/echo?id=away`)).json();
  assert.equal(fetched.headers.authorization, undefined, 'nor through fetch()');
  // A 401 from another origin is no token's to refresh: one request, no refresh.
  const e401 = await api.request(`${other}/auth?accept=secret&id=away-401`).catch((x) => x);
  assert.equal(e401.status, 401);
  assert.equal(e401.data.given, null);
  assert.equal(refreshes, 0);
  assert.equal((await log('away-401')).length, 1);
  // A derived client keeps its auth's origins, whatever its own baseUrl.
  const moved = api.extend({ baseUrl: `${other}/` });
  assert.equal(await auth(moved, 'echo?id=moved'), null);
  // auth.origins widens it; '*' sends it everywhere, on purpose.
  const widened = await createClient({ crossTab: false, auth: { token: () => 'secret', origins: [`${other}/`] } });
  assert.deepEqual([await auth(widened, `${other}/echo?id=w`), await auth(widened, `${server.url}/echo?id=w`)], ['<redacted>', null]);
  const everywhere = api.extend({ auth: { token: () => 'secret', origins: ['*'] } });
  assert.equal(await auth(everywhere, `${other}/echo?id=star`), '<redacted>');
  // Installed as the global fetch: another script's request to another origin goes without it.
  const original = globalThis.fetch;
  globalThis.fetch = api.fetch;
  try {
    const third = await (await fetch(`${other}/echo?id=third`, { method: 'POST', body: 'x' })).json();
    const own = await (await fetch(`${server.url}/echo?id=third`)).json();
    assert.deepEqual([third.headers.authorization ?? null, own.headers.authorization], [null, '<redacted>']);
  } finally {
    globalThis.fetch = original;
  }
  for (const c of [bare, api, widened]) c.close();
});

test("extend: a derived client's static headers win over its parent's header function and token, as over its static ones", async () => {
  const root = await createClient({ crossTab: false, headers: () => ({ 'x-a': 'root-fn', 'x-b': 'root-fn' }) });
  const echo = async (c, id, init) => (await c.request(`${server.url}/echo?id=${id}`, init)).headers;
  const pick = (h) => [h['x-a'] ?? null, h['x-b'] ?? null];
  assert.deepEqual(pick(await echo(root, 'ext-fn-root')), ['root-fn', 'root-fn']);
  const child = root.extend({ headers: { 'x-b': 'child', 'x-a': undefined } });
  assert.deepEqual(pick(await echo(child, 'ext-fn-child')), [null, 'child'], 'set and removed over the function');
  // A function of the child's own wins over its parent's, and the call's own headers over all.
  const grand = child.extend({ headers: () => ({ 'x-a': 'grand-fn' }) });
  assert.deepEqual(pick(await echo(grand, 'ext-fn-grand')), ['grand-fn', 'child']);
  assert.deepEqual(pick(await echo(grand, 'ext-fn-call', { headers: { 'x-a': 'call' } })), ['call', 'child']);
  // The token is the parent's auth's: a derived client's static Authorization wins over it, and a
  // 401 then is not the token's to refresh.
  let refreshes = 0;
  const authed = await createClient({ crossTab: false, retry: false, auth: { token: () => 't1', refresh: () => { refreshes++; }, origins: [server.url] } });
  const basic = authed.extend({ headers: { authorization: 'Basic dTpw' } });
  const refused = await basic.request(`${server.url}/auth?accept=t1&id=ext-basic`).catch((e) => e);
  assert.equal(refused.status, 401);
  assert.equal(refused.data.given, 'Basic dTpw');
  assert.equal(refreshes, 0);
  assert.equal((await authed.request(`${server.url}/auth?accept=t1&id=ext-bearer`)).token, 't1');
  root.close();
  authed.close();
});

test("a token or headers function reading AsyncLocalStorage reads each request's own, on every attempt", async () => {
  const { AsyncLocalStorage } = await import('node:async_hooks');
  const als = new AsyncLocalStorage();
  const seen = [];
  const tries = new Map();
  // Each user's first attempt answers 503, its retry 200.
  const transport = async (req) => {
    const u = new URL(req.url).searchParams.get('u');
    seen.push([u, req.headers.get('authorization'), req.headers.get('x-user')]);
    const n = (tries.get(u) ?? 0) + 1;
    tries.set(u, n);
    return new Response(n === 1 ? '' : '{}', { status: n === 1 ? 503 : 200, headers: { 'content-type': 'application/json' } });
  };
  const client = await createClient({
    crossTab: false, dedupe: false, fetch: transport, budget: false, breaker: false,
    concurrency: { max: 2 }, retry: { baseDelayMs: 1, maxDelayMs: 5 },
    auth: { token: () => als.getStore(), origins: ['http://127.0.0.1:9'] }, headers: () => ({ 'x-user': als.getStore() }),
  });
  // Started in one synchronous turn (a batch fanned out over users), queued for two slots, each
  // retried after a backoff that another call's timer or slot release ends.
  const users = Array.from({ length: 12 }, (_, i) => `u${i}`);
  await Promise.all(users.map((u) => als.run(u, () => client.request(`http://127.0.0.1:9/x?u=${u}`))));
  assert.equal(seen.length, 24);
  for (const [u, auth, user] of seen) assert.deepEqual([auth, user], [`Bearer ${u}`, u], u);
  client.close();
});

test("a fetch option, retry.retryOn and validate reading AsyncLocalStorage read each request's own, on a client without hooks", async () => {
  // Every user function is called in its call's async context, not only those of the UserFns's hooks,
  // header functions and token: a client with none of those ran these in another call's.
  const { AsyncLocalStorage } = await import('node:async_hooks');
  const als = new AsyncLocalStorage();
  const seen = { fetch: [], retryOn: [], validate: [] };
  const tries = new Map();
  // Each user's first attempt answers 503, its retry 200.
  const transport = async (req) => {
    const u = new URL(req.url).searchParams.get('u');
    seen.fetch.push([u, als.getStore()]);
    const n = (tries.get(u) ?? 0) + 1;
    tries.set(u, n);
    return new Response(n === 1 ? '' : '{}', { status: n === 1 ? 503 : 200, headers: { 'content-type': 'application/json' } });
  };
  const client = await createClient({
    crossTab: false, dedupe: false, fetch: transport, budget: false, breaker: false,
    concurrency: { max: 2 }, retry: { baseDelayMs: 1, maxDelayMs: 5 },
  });
  const users = Array.from({ length: 12 }, (_, i) => `u${i}`);
  await Promise.all(users.map((u) => als.run(u, () => client.request(`http://127.0.0.1:9/x?u=${u}`, {
    retry: { retryOn: () => { seen.retryOn.push([u, als.getStore()]); } },
    validate: () => { seen.validate.push([u, als.getStore()]); return true; },
  }))));
  assert.deepEqual([seen.fetch.length, seen.retryOn.length, seen.validate.length], [24, 12, 12]);
  for (const [name, list] of Object.entries(seen)) {
    for (const [u, store] of list) assert.equal(store, u, `${name} of ${u}`);
  }
  // schema()'s validate too.
  const checked = [];
  await Promise.all(users.map((u) => als.run(u, () => client.schema(`http://127.0.0.1:9/y?u=${u}`, {
    validate: () => { checked.push([u, als.getStore()]); return true; },
  }))));
  assert.equal(checked.length, 12);
  for (const [u, store] of checked) assert.equal(store, u, `schema validate of ${u}`);
  client.close();
});

test('a retry granted but never sent is no retry: stats() count what the server saw, and the budget keeps it', async () => {
  // Budget: one retry in all (ratio 0), so a retry charged but never sent would deny the next call's.
  const opts = { budget: { minRetries: 1, ratio: 0 }, crossTab: false };
  // (a) The call's own failures open its breaker: its third retry, granted, meets the open circuit.
  const client = await createClient({
    ...opts, budget: { minRetries: 5, ratio: 0 }, retry: { baseDelayMs: 1, maxAttempts: 5 }, breaker: { consecutiveFailures: 3 },
  });
  await assert.rejects(client.request(`${server.url}/status/503?id=node-unsent-open`));
  const seen = (await log('node-unsent-open')).length;
  assert.equal(seen, 3, 'the breaker opens after three failures in a row');
  assert.deepEqual([client.stats().attempts, client.stats().retries], [3, 2]);
  client.close();
  // (b) The caller aborts during the backoff: no retry was made, and the budget's one retry is left.
  const c2 = await createClient({ ...opts, breaker: false, retry: { baseDelayMs: 300, jitter: 'none' } });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(c2.request(`${server.url}/status/503?id=node-unsent-abort`, { signal: ac.signal }), (e) => e.name === 'AbortError');
  assert.deepEqual([c2.stats().attempts, c2.stats().retries], [1, 0]);
  const body = await c2.request(`${server.url}/fail-first?n=1&id=node-unsent-next`, { retry: { baseDelayMs: 1 } });
  assert.equal(body.attempt, 2, 'the next call still has the retry the aborted one never sent');
  assert.equal(c2.stats().retries, 1);
  c2.close();
});

test("a slow beforeRequest hook runs within the deadline: the attempt's timeoutMs starts when its request goes out", async () => {
  // A hook that signs each request in 300 ms, an attempt time of 200 ms and a backend that answers at once.
  const slow = await createClient({
    timeoutMs: 200,
    retry: false,
    hooks: { beforeRequest: () => new Promise((r) => setTimeout(r, 300)) },
  });
  const ok = await slow.request(`${server.url}/echo?id=node-slow-hook`).then((v) => v.path, (e) => `${e.name} ${e.phase}`);
  assert.equal(ok, '/echo', 'the hook did not spend the attempt time');
  assert.equal((await log('node-slow-hook')).length, 1);
  // One that hangs ends at the deadline, having sent nothing.
  const hangs = await createClient({
    timeoutMs: 200,
    deadlineMs: 800,
    retry: false,
    hooks: { beforeRequest: () => new Promise(() => {}) },
  });
  const started = performance.now();
  const e = await hangs.request(`${server.url}/echo?id=node-hanging-hook`).catch((x) => x);
  const ms = performance.now() - started;
  assert.deepEqual([e.name, e.phase, e.attempts], ['TimeoutError', 'deadline', 0]);
  assert.ok(ms >= 750 && ms < 1500, `ended after ${ms} ms`);
  assert.equal((await log('node-hanging-hook')).length, 0);
  assert.deepEqual([hangs.stats().inFlight, hangs.breakers()[0]?.samples ?? 0], [0, 0]);
  slow.close();
  hangs.close();
});
