// The everyday client in a real browser (issue 25, items 1-3), against the
// fault server on another origin: header functions and `auth` (a token per
// attempt, one refresh shared by concurrent 401s, the replay that is no
// retry), ky's four hooks, and derived clients (`extend`) sharing one
// engine. Bad input (a hook that throws, a token that rejects) ends with the
// typed error, sends nothing and leaks no slot.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';

let servers, browser, page, errors;
before(async () => {
  servers = await startServers();
  browser = await launchChromium();
  page = await browser.newPage();
  errors = watchErrors(page);
  await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
  await page.waitForFunction(() => window.ready === true);
  await page.evaluate(([fault, other]) => {
    window.fault = fault;
    window.other = other;
    window.sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    /** The outcome of a call as plain data. */
    window.outcome = (p) =>
      p.then(
        (value) => ({ ok: true, value }),
        (e) => ({
          ok: false, name: e?.name, option: e?.option, status: e?.status, retryDenied: e?.retryDenied,
          attempts: e?.attempts, cause: e?.cause === undefined ? undefined : String(e.cause?.message ?? e.cause),
          message: e?.message, classed: window.stormguard.isStormguardError(e),
        }),
      );
  }, [servers.fault, servers.other]);
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

/** `scenario([fault, other])` in the page and in Node: both results. */
async function both(scenario) {
  globalThis.stormguard ??= await import('../../pkg/node.js');
  const chromium = await page.evaluate(scenario, [servers.fault, servers.other]);
  const node = await scenario([servers.fault, servers.other]);
  return { chromium, node };
}

const log = async (id) => (await (await fetch(`${servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

test('headers as a function and auth.token run before every attempt: a retry carries the current token', async () => {
  const r = await page.evaluate(async () => {
    let n = 0;
    let calls = 0;
    const client = await window.stormguard.createClient({
      headers: () => ({ 'x-attempt-header': String(++calls) }),
      auth: { origins: [window.fault], token: async () => `tok-${++n}` },
      retry: { statuses: [401], baseDelayMs: 1, maxAttempts: 3 },
      breaker: false,
    });
    // tok-1 is refused (401, retried here only because statuses says so), tok-2 accepted.
    const first = await window.outcome(client.request(`${window.fault}/auth?accept=tok-2&id=h-token`));
    const echoed = await client.request(`${window.fault}/echo?id=h-echo`);
    return { first, n, calls, header: echoed.headers['x-attempt-header'], auth: echoed.headers.authorization, stats: client.stats() };
  });
  assert.equal(r.first.ok, true, JSON.stringify(r.first));
  assert.equal(r.first.value.token, 'tok-2', 'the retry read the token again');
  assert.equal(r.n, 3);
  assert.equal(r.calls, 3, 'the header function ran before each of the three attempts');
  assert.equal(r.header, '3');
  assert.equal(r.auth, '<redacted>', 'an Authorization header was sent');
  assert.equal(r.stats.inFlight, 0);
});

test('header functions and the token do not split dedupe identity; a call\'s own headers win over them', async () => {
  const r = await page.evaluate(async () => {
    let n = 0;
    const client = await window.stormguard.createClient({
      headers: () => ({ 'x-n': String(++n), 'x-mine': 'client' }),
      auth: { origins: [window.fault], token: () => 'client-token' },
    });
    const url = `${window.fault}/delay?ms=150&id=h-dedupe`;
    const [a, b] = await Promise.all([client.request(url), client.request(url)]);
    const own = await client.request(`${window.fault}/auth?accept=mine&id=h-own`, { headers: { Authorization: 'Bearer mine' } });
    const mine = await client.request(`${window.fault}/echo?id=h-own`, { headers: { 'X-Mine': 'call' } });
    return { same: a.ok && b.ok, deduped: client.stats().deduped, own: own.token, header: mine.headers['x-mine'] };
  });
  assert.equal(r.same, true);
  assert.equal(r.deduped, 1, 'the second call joined the first');
  assert.equal((await log('h-dedupe')).length, 1, 'one request on the wire');
  assert.equal(r.own, 'mine', "the call's own Authorization wins over auth.token");
  assert.equal(r.header, 'call', "the call's own header wins over the header function's");
});

test('a token function that rejects or a header function that throws: OptionsError with cause, nothing sent, no sample, no slot held', async () => {
  const r = await page.evaluate(async () => {
    const auth = await window.stormguard.createClient({
      auth: { origins: [window.fault], token: () => Promise.reject(new Error('vault down')) }, concurrency: { max: 1, queue: 5 },
    });
    const headers = await window.stormguard.createClient({
      headers: () => { throw new Error('no headers today'); }, concurrency: { max: 1, queue: 5 },
    });
    const bad = await window.stormguard.createClient({ auth: { origins: [window.fault], token: () => 42 } });
    const calls = [1, 2, 3].map((i) => window.outcome(auth.request(`${window.fault}/echo?id=h-bad-token&i=${i}`)));
    const a = await Promise.all(calls);
    const h = await window.outcome(headers.request(`${window.fault}/echo?id=h-bad-token`));
    const b = await window.outcome(bad.request(`${window.fault}/echo?id=h-bad-token`));
    return { a, h, b, stats: [auth.stats(), headers.stats()], breakers: auth.breakers() };
  });
  for (const e of r.a) {
    assert.equal(e.name, 'OptionsError');
    assert.equal(e.option, 'auth');
    assert.equal(e.cause, 'vault down');
    assert.equal(e.classed, true);
    assert.equal(e.attempts, 0);
  }
  assert.equal(r.h.name, 'OptionsError');
  assert.equal(r.h.option, 'headers');
  assert.equal(r.h.cause, 'no headers today');
  assert.equal(r.b.option, 'auth', 'a token that is no string');
  assert.equal((await log('h-bad-token')).length, 0, 'nothing was sent');
  assert.deepEqual(r.stats.map((s) => [s.inFlight, s.queued, s.attempts, s.failures]), [[0, 0, 0, 3], [0, 0, 0, 1]]);
  assert.ok(r.breakers.every((b) => b.samples === 0), 'no breaker sample');
});

test('auth in a page: the token goes to the page\'s origin, baseUrl\'s and auth.origins only, installed as the global fetch too', async () => {
  const r = await page.evaluate(async () => {
    const { createClient } = window.stormguard;
    let refreshes = 0;
    const auth = { token: () => 'secret', refresh: () => { refreshes++; } };
    const sent = async (c, url, init) => (await c.request(url, init)).headers.authorization ?? null;
    const out = {};
    // No baseUrl: the page's origin (the static server answers /echo too).
    const page = await createClient({ retry: false, crossTab: false, auth });
    out.page = [await sent(page, '/echo?id=h-home-page'), await sent(page, `${window.fault}/echo?id=h-home-away`)];
    // baseUrl: its origin, not the page's.
    const api = await createClient({ baseUrl: `${window.fault}/`, retry: false, crossTab: false, auth });
    out.api = [await sent(api, 'echo?id=h-home-api'), await sent(api, `${window.other}/echo?id=h-home-away`),
      await sent(api, `${window.other}/echo?id=h-home-away`, { method: 'POST', body: { a: 1 } })];
    const e401 = await window.outcome(api.request(`${window.other}/auth?accept=secret&id=h-home-401`));
    out.e401 = [e401.status, refreshes];
    // auth.origins widens it.
    const wide = await createClient({ retry: false, crossTab: false, auth: { ...auth, origins: [window.other] } });
    out.wide = [await sent(wide, `${window.other}/echo?id=h-home-wide`), await sent(wide, `${window.fault}/echo?id=h-home-wide`)];
    // Installed as the global fetch: a third party's GET and POST go without it, the app's own with it.
    const original = window.fetch;
    window.fetch = api.fetch;
    try {
      const get = await (await fetch(`${window.other}/echo?id=h-home-third`)).json();
      const post = await (await fetch(`${window.other}/echo?id=h-home-third`, { method: 'POST', body: 'x' })).json();
      const own = await (await fetch(`${window.fault}/echo?id=h-home-third`)).json();
      out.installed = [get.headers.authorization ?? null, post.headers.authorization ?? null, own.headers.authorization];
    } finally {
      window.fetch = original;
    }
    for (const c of [page, api, wide]) c.close();
    return out;
  });
  assert.deepEqual(r, {
    page: ['<redacted>', null],
    api: ['<redacted>', null, null],
    e401: [401, 0],
    wide: ['<redacted>', null],
    installed: [null, null, '<redacted>'],
  });
  assert.equal((await log('h-home-401')).length, 1, 'no replay of another origin\'s 401');
});

test('no error, cause or event repeats a token, a header value or a URL\'s userinfo', async () => {
  const results = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const where = typeof window === 'object' ? 'page' : 'node';
    const id = `h-secrets-${where}`;
    const events = [];
    const listen = (c) => {
      for (const name of ['attempt', 'retry', 'timeout', 'giveUp', 'breaker', 'fallback', 'storage', 'wait']) {
        c.on(name, (e) => events.push(e));
      }
      return c;
    };
    const opts = { retry: false, crossTab: false };
    const token = listen(await createClient({ ...opts, auth: { token: () => 'sk_live_1\r\nX-Evil: 1', origins: ['*'] } }));
    const nul = listen(await createClient({ ...opts, auth: { token: () => 'sk_live_2\0', origins: ['*'] } }));
    const headers = listen(await createClient({ ...opts, headers: () => ({ 'x-api-key': 'sk_live_3\nX-Evil: 1' }) }));
    const pairs = listen(await createClient({ ...opts, headers: () => [['x-api-key', 'sk_live_4\rX']] }));
    const plain = listen(await createClient(opts));
    const url = `${fault}/echo?id=${id}`;
    const withUser = url.replace('://', '://user:sk_live_5@');
    const outcomes = {
      token: await token.request(url).catch((e) => e),
      nul: await nul.fetch(url).catch((e) => e),
      headers: await headers.request(url).catch((e) => e),
      pairs: await pairs.request(url).catch((e) => e),
      fetchHeader: await plain.fetch(url, { headers: { 'x-api-key': 'sk_live_6\nX-Evil: 1' } }).catch((e) => e),
      fetchUser: await plain.fetch(withUser).catch((e) => e),
      fetchRequestUser: await plain.fetch(withUser, { method: 'POST', body: 'x' }).catch((e) => e),
      requestUser: await plain.request(withUser).catch((e) => e),
      requestHeader: await plain.request(url, { headers: { 'x-api-key': 'sk_live_7\nX-Evil: 1' } }).catch((e) => e),
    };
    const said = (e) => [e?.name, e?.message, String(e), e?.stack, e?.cause?.message, String(e?.cause), e?.cause?.stack].join(' | ');
    const out = {};
    for (const [name, e] of Object.entries(outcomes)) out[name] = { kind: `${e?.name}:${e?.option ?? ''}`, leaks: /sk_live/.test(said(e)) };
    out.events = events.filter((e) => /sk_live/.test(JSON.stringify(e))).length;
    for (const c of [token, nul, headers, pairs, plain]) c.close();
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r, {
      token: { kind: 'OptionsError:auth', leaks: false },
      nul: { kind: 'OptionsError:auth', leaks: false },
      headers: { kind: 'OptionsError:headers', leaks: false },
      pairs: { kind: 'OptionsError:headers', leaks: false },
      fetchHeader: { kind: 'TypeError:', leaks: false },
      fetchUser: { kind: 'TypeError:', leaks: false },
      fetchRequestUser: { kind: 'TypeError:', leaks: false },
      requestUser: { kind: 'OptionsError:url', leaks: false },
      requestHeader: { kind: 'OptionsError:headers', leaks: false },
      events: 0,
    }, host);
  }
  assert.equal((await log('h-secrets-page')).length + (await log('h-secrets-node')).length, 0, 'nothing was sent');
});

test('a beforeRequest hook\'s Request is checked by its real URL: a subclass whose url getter lies, or a Proxy of a Request, is refused', async () => {
  const results = await both(async ([fault, other]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const where = typeof window === 'object' ? 'page' : 'node';
    const id = `h-real-url-${where}`;
    class Liar extends Request {
      get url() { return `${fault}/echo?id=${id}`; }
    }
    const away = `${other}/echo?id=${id}`;
    const hooks = {
      subclass: (req) => new Liar(away, { headers: req.headers }),
      proxy: (req) => new Proxy(new Request(away, { headers: req.headers }), {
        get: (t, k) => (k === 'url' ? req.url : Reflect.get(t, k, t)),
      }),
      // (Node's getters read a Proxy's target, Chromium's refuse it: either way not another origin.)
      plainProxy: (req) => new Proxy(new Request(away, { headers: req.headers }), {}),
      // A subclass that tells the truth, to the same origin: sent.
      honest: (req) => new (class extends Request {})(req.url, { headers: req.headers }),
    };
    const out = {};
    for (const [name, hook] of Object.entries(hooks)) {
      const client = await createClient({
        retry: false, crossTab: false, auth: { token: () => 'secret', origins: [fault] }, hooks: { beforeRequest: hook },
      });
      const e = await client.request(`${fault}/echo?id=${id}`).then((v) => v.headers.authorization, (x) => `${x.name}:${x.option}`);
      out[name] = e;
      client.close();
    }
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r, {
      subclass: 'OptionsError:hooks', proxy: 'OptionsError:hooks', plainProxy: 'OptionsError:hooks', honest: '<redacted>',
    }, host);
  }
  for (const where of ['page', 'node']) assert.equal((await log(`h-real-url-${where}`)).length, 1, `${where}: only the honest one was sent`);
});

test('schema() keeps no default copy for a client whose attempts may carry a token or added headers', async () => {
  const r = await page.evaluate(async () => {
    localStorage.clear();
    const url = `${window.fault}/echo?id=h-schema`;
    const authed = await window.stormguard.createClient({ auth: { origins: [window.fault], token: () => 'me' } });
    const hooked = await window.stormguard.createClient({ hooks: { beforeRequest: () => {} } });
    const plain = await window.stormguard.createClient();
    const sources = [];
    for (const c of [authed, hooked]) sources.push((await c.schema(url)).source);
    const before = localStorage.length;
    await plain.schema(url);
    const named = await authed.schema(url, { cacheKey: 'mine' });
    return { sources, before, after: localStorage.length, named: named.source };
  });
  assert.deepEqual(r.sources, ['network', 'network']);
  assert.equal(r.before, 0, 'nothing stored under the URL for the token or hook clients');
  assert.equal(r.after, 2, 'the plain client and an explicit cacheKey store');
});

test('401: one refresh for concurrent calls of a client and its derived client, each replayed once with the new token', async () => {
  const r = await page.evaluate(async () => {
    let token = 'old';
    let refreshes = 0;
    const client = await window.stormguard.createClient({
      auth: {
        origins: [window.fault],
        token: () => token,
        refresh: async () => {
          refreshes++;
          await window.sleep(100);
          token = 'new';
        },
      },
    });
    const users = client.extend({ headers: { 'x-module': 'users' } });
    const url = (i) => `${window.fault}/auth?accept=new&delay=100&id=h-refresh&i=${i}`;
    const all = await Promise.all([
      ...[0, 1, 2].map((i) => window.outcome(client.request(url(i)))),
      ...[3, 4].map((i) => window.outcome(users.request(url(i)))),
    ]);
    return { all, refreshes, stats: client.stats(), breakers: client.breakers() };
  });
  for (const o of r.all) assert.equal(o.ok && o.value.token, 'new', JSON.stringify(o));
  assert.equal(r.refreshes, 1, 'one refresh for the five 401s');
  assert.equal((await log('h-refresh')).length, 10, 'each call sent twice');
  assert.equal(r.stats.retries, 0, 'a replay is no retry');
  assert.equal(r.stats.attempts, 10);
  const b = r.breakers.find((x) => x.key.includes('/auth'));
  assert.equal(b.samples, 5, 'only the replays are breaker samples');
});

test('401 to a token older than the last finished refresh: replayed at once, no second refresh', async () => {
  const r = await page.evaluate(async () => {
    let token = 'a';
    let refreshes = 0;
    const client = await window.stormguard.createClient({
      auth: { origins: [window.fault], token: () => token, refresh: async () => { refreshes++; await window.sleep(50); token = 'b'; } },
    });
    // slow: sent with 'a', answered 401 after 600 ms, when the refresh of `fast` has finished
    const slow = window.outcome(client.request(`${window.fault}/auth?accept=b&delay=600&id=h-older`));
    await window.sleep(50);
    const fast = await window.outcome(client.request(`${window.fault}/auth?accept=b&id=h-older-fast`));
    const t0 = performance.now();
    const late = await slow;
    return { fast, late, refreshes, after: performance.now() - t0 };
  });
  assert.equal(r.fast.value.token, 'b');
  assert.equal(r.late.value.token, 'b');
  assert.equal(r.refreshes, 1);
});

test("refresh: a stalled refresh is forgotten at its starting call's deadline; calls made inside refresh() never wait for one", async () => {
  const r = await page.evaluate(async () => {
    // A refresh that never settles the first time: bounded by the deadline of the call that started it.
    let token = 'old';
    let refreshes = 0;
    const stalls = await window.stormguard.createClient({
      retry: false,
      auth: { origins: [window.fault], token: () => token, refresh: () => (++refreshes === 1 ? new Promise(() => {}) : void (token = 'new')) },
    });
    const first = await window.outcome(stalls.request(`${window.fault}/auth?accept=new&id=h-stall`, { deadlineMs: 300 }));
    const later = await window.outcome(stalls.extend({}).request(`${window.fault}/auth?accept=new&id=h-stall`, { deadlineMs: 10000 }));
    // The usual recipe, the refresh endpoint answering 401 (its refresh token expired).
    let inner = 0;
    const api = await window.stormguard.createClient({
      retry: false,
      deadlineMs: 3000,
      auth: {
        origins: [window.fault],
        token: () => 'stale',
        refresh: () => (inner++, api.request(`${window.fault}/auth?accept=fresh&id=h-inner-refresh`, { method: 'POST' })),
      },
    });
    const outer = await window.outcome(api.request(`${window.fault}/auth?accept=fresh&id=h-inner`));
    return { first, later, refreshes, outer, inner, inFlight: api.stats().inFlight };
  });
  assert.equal(r.first.status, 401);
  assert.equal(r.later.ok && r.later.value.token, 'new', 'a later 401 refreshed again: ' + JSON.stringify(r.later));
  assert.equal(r.refreshes, 2);
  assert.equal(r.outer.status, 401);
  assert.match(r.outer.cause ?? '', /401/, "the refresh call's own 401 is the cause, not the deadline: " + JSON.stringify(r.outer));
  assert.equal(r.inner, 1);
  assert.equal((await log('h-inner')).length, 1);
  assert.equal((await log('h-inner-refresh')).length, 1, 'the refresh call is not replayed');
  assert.equal(r.inFlight, 0);
});

test('a replay keeps the idempotency key and the body, for a POST too; a second 401 and a refresh that throws end with HttpError 401', async () => {
  const r = await page.evaluate(async () => {
    let token = 'x';
    const client = await window.stormguard.createClient({
      auth: { origins: [window.fault], token: () => token, refresh: () => { token = 'y'; } },
    });
    const post = await window.outcome(client.request(`${window.fault}/auth?accept=y&id=h-post`, {
      method: 'POST', body: { sku: 'a1' }, idempotencyKey: 'order-17',
    }));
    let refreshed = 0;
    const stuck = await window.stormguard.createClient({ auth: { origins: [window.fault], token: () => 'never', refresh: () => { refreshed++; } } });
    const twice = await window.outcome(stuck.request(`${window.fault}/auth?accept=other&id=h-twice`));
    const failing = await window.stormguard.createClient({
      auth: { origins: [window.fault], token: () => 'stale', refresh: async () => { throw new Error('refresh token expired'); } },
    });
    const threw = await window.outcome(failing.request(`${window.fault}/auth?accept=fresh&id=h-threw`));
    const noRefresh = await window.stormguard.createClient({ auth: { origins: [window.fault], token: () => 'stale' } });
    const plain = await window.outcome(noRefresh.request(`${window.fault}/auth?accept=fresh&id=h-plain`));
    return { post, twice, refreshed, threw, plain };
  });
  assert.equal(r.post.ok, true, JSON.stringify(r.post));
  assert.equal(r.post.value.method, 'POST');
  assert.equal(r.post.value.body, '{"sku":"a1"}', 'the replay carries the body');
  const posts = await log('h-post');
  assert.deepEqual(posts.map((e) => e.idempotencyKey), ['order-17', 'order-17']);
  assert.equal(r.twice.name, 'HttpError');
  assert.equal(r.twice.status, 401);
  assert.equal(r.twice.attempts, 2);
  assert.equal(r.refreshed, 1);
  assert.equal((await log('h-twice')).length, 2);
  assert.equal(r.threw.status, 401);
  assert.equal(r.threw.cause, 'refresh token expired');
  assert.equal((await log('h-threw')).length, 1);
  assert.equal(r.plain.status, 401, 'without refresh a 401 is an answer');
  assert.equal((await log('h-plain')).length, 1);
});

test('hooks: beforeRequest changes headers or returns a Request; afterResponse replaces the Response, which classification uses', async () => {
  const r = await page.evaluate(async () => {
    const seen = [];
    const client = await window.stormguard.createClient({
      retry: { baseDelayMs: 1 },
      hooks: {
        beforeRequest: [
          (request, info) => {
            seen.push(['before', info.attempt, info.method, typeof info.requestId, info.url.includes('/echo')]);
            request.headers.set('x-in-place', 'yes');
          },
          (request) => new Request(request, { headers: { 'x-replaced': 'yes', 'x-in-place': request.headers.get('x-in-place') } }),
        ],
        afterResponse: (request, response, info) => {
          seen.push(['after', info.attempt, response.status, request.headers.get('x-replaced')]);
          if (response.status === 503) return new Response(JSON.stringify({ replaced: true }), { status: 200 });
          if (new URL(request.url).searchParams.get('make') === '500') return new Response('no', { status: 500 });
        },
      },
    });
    const echo = await client.request(`${window.fault}/echo?id=h-hooks`);
    const replaced = await client.request(`${window.fault}/status/503?id=h-hooks-503`);
    const worse = await window.outcome(client.request(`${window.fault}/echo?id=h-hooks-500&make=500`, { retry: { maxAttempts: 2, baseDelayMs: 1 } }));
    // A hook that reads the body gets a clone (as ky's): the call's own body is still there.
    const bodies = [];
    const reading = await window.stormguard.createClient({
      hooks: { afterResponse: async (request, response) => { bodies.push((await response.json()).path); } },
    });
    const read = await reading.request(`${window.fault}/echo?id=h-hooks-read`);
    const fetched = await reading.fetch(`${window.fault}/echo?id=h-hooks-read`);
    const readBack = [read.path, fetched.bodyUsed, (await fetched.json()).path, bodies, reading.breakers()[0].state];
    return { headers: echo.headers, replaced, worse, seen, readBack };
  });
  assert.equal(r.headers['x-in-place'], 'yes');
  assert.equal(r.headers['x-replaced'], 'yes');
  assert.deepEqual(r.replaced, { replaced: true }, 'the 503 became a 200: no retry');
  assert.equal((await log('h-hooks-503')).length, 1);
  assert.equal(r.worse.status, 500, 'a 200 made a 500 is retried as one');
  assert.equal(r.worse.attempts, 2);
  assert.deepEqual(r.seen.slice(0, 2), [['before', 1, 'GET', 'string', true], ['after', 1, 200, 'yes']]);
  assert.deepEqual(r.readBack, ['/echo', false, '/echo', ['/echo', '/echo'], 'closed'],
    'a hook that reads the body leaves the call its own: no failure, no retry, the breaker closed');
  assert.equal((await log('h-hooks-read')).length, 2, 'one attempt per call');
});

test('hooks: a beforeRequest to another origin, a throwing hook and a hanging one end typed, send nothing, free the slot', async () => {
  const r = await page.evaluate(async () => {
    const make = (hooks, extra = {}) => window.stormguard.createClient({ hooks, concurrency: { max: 1, queue: 5 }, ...extra });
    const away = await make({ beforeRequest: (req) => new Request('http://127.0.0.2:1/elsewhere', req) });
    const throws = await make({ beforeRequest: () => { throw new Error('hook bug'); } });
    const after = await make({ afterResponse: async () => { throw new Error('after bug'); } });
    const hangs = await make({ beforeRequest: () => new Promise(() => {}) }, { timeoutMs: 200, deadlineMs: 1000, retry: false });
    const url = `${window.fault}/echo?id=h-bad-hooks`;
    const out = {
      away: await window.outcome(away.request(url)),
      throws: await Promise.all([1, 2].map(() => window.outcome(throws.request(url)))),
      after: await window.outcome(after.request(`${window.fault}/echo?id=h-after-bug`)),
      timeout: await window.outcome(hangs.request(url)),
    };
    const ctl = new AbortController();
    setTimeout(() => ctl.abort('bye'), 50);
    out.aborted = await window.outcome(hangs.request(url, { signal: ctl.signal }));
    out.stats = [away, throws, after, hangs].map((c) => c.stats());
    out.breakers = [throws.breakers(), after.breakers()];
    return out;
  });
  assert.equal(r.away.name, 'OptionsError');
  assert.equal(r.away.option, 'hooks');
  for (const e of r.throws) assert.deepEqual([e.name, e.option, e.cause], ['OptionsError', 'hooks', 'hook bug']);
  assert.deepEqual([r.after.name, r.after.option, r.after.cause, r.after.attempts], ['OptionsError', 'hooks', 'after bug', 1]);
  assert.equal(r.timeout.name, 'TimeoutError', 'a hook that hangs ends at the deadline (it runs within it, not within timeoutMs)');
  assert.equal(r.aborted.name, 'AbortError');
  assert.equal((await log('h-bad-hooks')).length, 0, 'nothing sent');
  assert.equal((await log('h-after-bug')).length, 1, 'afterResponse ran on what was sent');
  for (const s of r.stats) assert.deepEqual([s.inFlight, s.queued], [0, 0]);
  assert.ok(r.breakers.flat().every((b) => b.samples === 0), 'no breaker sample');
});

test('hooks: beforeRetry false stops with the last error (retryDenied hook), never adds one; beforeError replaces the error', async () => {
  const r = await page.evaluate(async () => {
    const asked = [];
    const client = await window.stormguard.createClient({
      breaker: false,
      retry: { baseDelayMs: 5, jitter: 'none' },
      hooks: {
        beforeRetry: ({ error, delayMs, attempt, requestId }) => {
          asked.push([error.name, error.status, delayMs, attempt, typeof requestId]);
          return false;
        },
      },
    });
    const stopped = await window.outcome(client.request(`${window.fault}/status/503?id=h-retry-hook`));
    const never = await window.outcome(client.request(`${window.fault}/status/404?id=h-retry-404`));
    const { HttpError, TimeoutError } = window.stormguard;
    const errors = await window.stormguard.createClient({
      retry: false,
      hooks: {
        beforeError: [
          (e) => (e instanceof HttpError ? new TimeoutError(`wrapped ${e.status}`, { phase: 'attempt' }) : e),
          async (e) => { e.message += ' (seen)'; return e; },
        ],
      },
    });
    const wrapped = await window.outcome(errors.request(`${window.fault}/status/500?id=h-error-hook`));
    const badly = await window.stormguard.createClient({ retry: false, hooks: { beforeError: () => new Error('plain') } });
    const bad = await window.outcome(badly.request(`${window.fault}/status/500?id=h-error-hook`));
    const throwing = await window.stormguard.createClient({ retry: false, hooks: { beforeError: () => { throw new Error('x'); } } });
    const thrown = await throwing.request(`${window.fault}/status/500?id=h-error-hook`).catch((e) => e);
    const threw = [thrown.name, thrown.option, thrown.cause?.message, thrown.attempts, thrown.requestId !== '', thrown.elapsedMs > 0];
    // fetch(): the hooks get the StormguardError its rejection carries, and what they
    // return is rejected with as fetch would; a 5xx resolves; a caller's reason stays.
    const seen = [];
    const { NetworkError } = window.stormguard;
    const fetching = await window.stormguard.createClient({
      retry: false,
      breaker: false,
      hooks: {
        beforeError: (e) => {
          seen.push(e.name);
          return e instanceof NetworkError ? new TimeoutError('wrapped network', { phase: 'attempt' }) : e;
        },
      },
    });
    const refused = await fetching.fetch('http://127.0.0.1:1/').catch((e) => e);
    const status = (await fetching.fetch(`${window.fault}/status/500?id=h-error-hook`)).status;
    const ctl = new AbortController();
    const p = fetching.fetch(`${window.fault}/hang?id=h-error-hook`, { signal: ctl.signal }).catch((e) => e);
    setTimeout(() => ctl.abort('mine'), 20);
    const aborted = await p;
    const viaFetch = {
      refused: [refused instanceof DOMException, refused.name, refused.cause?.name, refused.cause?.message],
      status, aborted, seen,
    };
    return { asked, stopped, never, stats: client.stats(), wrapped, bad, viaFetch, threw };
  });
  assert.deepEqual(r.asked, [['HttpError', 503, 5, 1, 'string']], 'asked once, before the backoff; never for a 404');
  assert.equal(r.stopped.status, 503);
  assert.equal(r.stopped.retryDenied, 'hook');
  assert.equal(r.never.retryDenied, 'status');
  assert.equal(r.stats.retries, 0);
  assert.equal((await log('h-retry-hook')).length, 1);
  assert.equal(r.wrapped.name, 'TimeoutError');
  assert.equal(r.wrapped.message, 'wrapped 500 (seen)');
  assert.deepEqual([r.bad.name, r.bad.option], ['OptionsError', 'hooks']);
  assert.deepEqual(r.threw, ['OptionsError', 'hooks', 'x', 1, true, true], "a throwing beforeError keeps the call's id, attempts and time");
  assert.deepEqual(r.viaFetch, {
    refused: [true, 'TimeoutError', 'TimeoutError', 'wrapped network'],
    status: 500,
    aborted: 'mine',
    seen: ['NetworkError'],
  }, "fetch(): the hook's error, as fetch rejects with it; none for a response or the caller's reason");
});

test('hooks: a beforeError hook that never settles is bounded: an abort or close() ends the wait for it', async () => {
  const r = await page.evaluate(async () => {
    let called;
    const asked = () => new Promise((res) => (called = res));
    const client = await window.stormguard.createClient({
      retry: false, breaker: false, deadlineMs: 5000,
      hooks: { beforeError: () => (called(), new Promise(() => {})) },
    });
    let hook = asked();
    const ctl = new AbortController();
    const p = window.outcome(client.request(`${window.fault}/status/500?id=h-error-hang`, { signal: ctl.signal }));
    await hook;
    ctl.abort('mine');
    const aborted = await p;
    hook = asked();
    const ctl2 = new AbortController();
    const f = client.fetch('http://127.0.0.1:1/', { signal: ctl2.signal }).catch((e) => e);
    await hook;
    ctl2.abort('mine too');
    const fetched = await f;
    const child = client.extend({});
    hook = asked();
    const c = window.outcome(child.request(`${window.fault}/status/500?id=h-error-hang`));
    await hook;
    client.close();
    return { aborted, fetched, closed: await c };
  });
  assert.equal(r.aborted.name, 'AbortError', JSON.stringify(r.aborted));
  assert.equal(r.fetched, 'mine too', "fetch() rejects with the caller's reason");
  assert.equal(r.closed.name, 'AbortError', JSON.stringify(r.closed));
});

test('a call whose signal is aborted already ends at once as its abort, as fetch does: no header function, token, hook or retryOn runs, nothing is sent', async () => {
  const results = await both(async ([fault]) => {
    const { createClient, AbortError } = globalThis.stormguard ?? window.stormguard;
    const where = typeof window === 'object' ? 'page' : 'node';
    const id = `h-pre-aborted-${where}`;
    const ran = [];
    const mark = (name, gives) => (...args) => (ran.push(name), typeof gives === 'function' ? gives(...args) : gives);
    const client = await createClient({
      headers: mark('headers', { 'x-tenant': 't' }),
      auth: { origins: [fault], token: mark('token', 'tok'), refresh: mark('refresh') },
      retry: { retryOn: mark('retryOn', true) },
      hooks: {
        beforeRequest: mark('beforeRequest'), afterResponse: mark('afterResponse'),
        beforeRetry: mark('beforeRetry', true), beforeError: mark('beforeError', (e) => e),
      },
    });
    const events = [];
    for (const name of ['attempt', 'retry', 'timeout', 'giveUp', 'breaker', 'fallback', 'storage', 'wait']) {
      client.on(name, (e) => events.push(`${e.type}:${e.errorName ?? ''}`));
    }
    const url = `${fault}/echo?id=${id}`;
    const calls = {
      get: (signal) => client.request(url, { signal }), // a GET shares a flight (dedupe)
      post: (signal) => client.request(url, { method: 'POST', body: 'x', signal }),
      fetch: (signal) => client.fetch(url, { signal }),
      fetchRequest: (signal) => client.fetch(new Request(url, { signal })),
      schema: (signal) => client.schema(url, { signal, fallback: 'fb' }),
    };
    const out = {};
    for (const [name, call] of Object.entries(calls)) {
      for (const [how, signal] of [['abort()', AbortSignal.abort()], ['abort(why)', AbortSignal.abort(new Error('why'))]]) {
        const e = await call(signal).then((v) => ({ resolved: v }), (e) => e);
        out[`${name} ${how}`] = e === signal.reason ? 'the reason itself'
          : [e instanceof AbortError ? 'AbortError' : String(e), e?.name, e?.reason === signal.reason, e?.attempts];
      }
    }
    const s = client.stats();
    out.stats = [s.requests, s.attempts, s.failures, s.deduped, s.fallbacks, s.inFlight, s.queued];
    out.ran = ran;
    out.events = events;
    client.close();
    return out;
  });
  const aborted = ['AbortError', 'AbortError', true, 0];
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r.ran, [], `${host}: no function of the client's ran`);
    for (const how of ['abort()', 'abort(why)']) {
      for (const name of ['get', 'post', 'schema']) assert.deepEqual(r[`${name} ${how}`], aborted, `${host}: ${name} ${how}`);
      for (const name of ['fetch', 'fetchRequest']) assert.equal(r[`${name} ${how}`], 'the reason itself', `${host}: ${name} ${how}`);
    }
    // Counted as an abort in flight is: a request and a failure (no attempt went), its giveUp.
    assert.deepEqual(r.stats, [10, 0, 10, 0, 0, 0, 0], `${host}: stats`);
    assert.deepEqual(r.events, Array(10).fill('giveUp:AbortError'), `${host}: events`);
  }
  assert.equal((await log('h-pre-aborted-page')).length + (await log('h-pre-aborted-node')).length, 0, 'nothing sent');
});

test('extend: options merged over the parent\'s, one engine (breakers, slots), hooks appended, close() as a tree', async () => {
  const r = await page.evaluate(async () => {
    const order = [];
    const root = await window.stormguard.createClient({
      baseUrl: `${window.fault}/`,
      headers: { 'x-a': 'root', 'x-b': 'root' },
      retry: false,
      breaker: { consecutiveFailures: 2 },
      concurrency: { max: 1, queue: 10 },
      hooks: { beforeRequest: () => { order.push('root'); } },
    });
    const child = root.extend({
      baseUrl: 'status/',
      headers: { 'x-b': 'child', 'x-c': 'child' },
      timeoutMs: 3000,
      hooks: { beforeRequest: () => { order.push('child'); } },
    });
    const echo = await child.request(`${window.fault}/echo?id=h-extend`);
    const teapot = await window.outcome(child.request('418?id=h-extend'));
    const refused = ['budget', 'breaker', 'concurrency', 'storage', 'crossTab', 'wasm'].map((k) => {
      try {
        root.extend({ [k]: false });
        return 'accepted';
      } catch (e) {
        return `${e.name}:${e.option}`;
      }
    });
    // One breaker per backend: the child's failures open it for the root too.
    const key = { breakerKey: 'shared' };
    await window.outcome(child.request('503?id=h-extend-b', key));
    await window.outcome(child.request('503?id=h-extend-b', key));
    const open = await window.outcome(root.request(`${window.fault}/echo?id=h-extend-b`, key));
    // One slot (max 1): the child's hanging call holds it, the root's waits.
    const hang = window.outcome(child.request(`${window.fault}/hang?id=h-extend-hang`));
    await window.sleep(50);
    const queued = root.stats().queued;
    const rootCall = window.outcome(root.request(`${window.fault}/echo?id=h-extend-after`));
    await window.sleep(50);
    const queuedNow = root.stats().queued;
    child.close();
    const afterClose = [await hang, await rootCall, await window.outcome(child.request('200'))];
    const grand = root.extend({}).extend({});
    const last = window.outcome(grand.request(`${window.fault}/hang?id=h-extend-grand`));
    await window.sleep(50);
    root.close();
    return {
      headers: echo.headers, teapot, refused, open, queued, queuedNow, afterClose, order,
      grand: await last, later: await window.outcome(grand.request(`${window.fault}/echo`)),
      inFlight: root.stats().inFlight,
      breakers: [root.breakers().length, grand.breakers().length],
    };
  });
  assert.deepEqual([r.headers['x-a'], r.headers['x-b'], r.headers['x-c']], ['root', 'child', 'child']);
  assert.equal(r.teapot.status, 418, 'baseUrl joined under the parent\'s');
  assert.deepEqual(r.refused, ['OptionsError:budget', 'OptionsError:breaker', 'OptionsError:concurrency', 'OptionsError:storage', 'OptionsError:crossTab', 'OptionsError:wasm']);
  assert.equal(r.open.name, 'CircuitOpenError', "the child's failures opened the root's breaker");
  assert.equal(r.queuedNow, 1, "the root's call waited for the child's slot");
  assert.equal(r.afterClose[0].name, 'AbortError', "the child's close() ended its call");
  assert.equal(r.afterClose[1].ok, true, "the root's call went on");
  assert.equal(r.afterClose[2].name, 'AbortError', 'a closed child refuses later calls');
  assert.deepEqual(r.order.slice(0, 2), ['root', 'child'], "the child's hooks after the parent's");
  assert.equal(r.grand.name, 'AbortError', "the root's close() ended a grandchild's call");
  assert.equal(r.later.name, 'AbortError');
  assert.equal(r.inFlight, 0);
  assert.deepEqual(r.breakers, [0, 0], "a closed root's derived clients list no breakers, as the root");
  // (Chromium logs every non-2xx answer as a console error.)
  assert.deepEqual(errors.filter((e) => !e.includes('Failed to load resource')), []);
});

test("extend: a derived client's fetch option is its transport (its own derived clients' too), its FetchInit fields over its parent's", async () => {
  const r = await page.evaluate(async () => {
    const seen = [];
    const root = await window.stormguard.createClient({ cache: 'no-store', retry: false });
    const child = root.extend({
      fetch: (request) => {
        seen.push([new URL(request.url).searchParams.get('who'), request.headers.get('x-h'), request.cache, request.credentials]);
        return fetch(request);
      },
      headers: () => ({ 'x-h': 'from-fn' }),
      credentials: 'omit',
    });
    const grandchild = child.extend({});
    await root.request(`${window.fault}/echo?who=root`);
    await child.request(`${window.fault}/echo?who=child`);
    await grandchild.request(`${window.fault}/echo?who=grandchild`);
    let bad;
    try {
      root.extend({ fetch: 'nope' });
    } catch (e) {
      bad = [e.name, e.option];
    }
    return { seen, bad };
  });
  assert.deepEqual(r.seen, [['child', 'from-fn', 'no-store', 'omit'], ['grandchild', 'from-fn', 'no-store', 'omit']]);
  assert.deepEqual(r.bad, ['OptionsError', 'fetch']);
});

test('invalid hooks and auth options: createClient rejects and extend throws, naming the option', async () => {
  const r = await page.evaluate(async () => {
    const bad = [
      { hooks: { beforeRequest: 'x' } },
      { hooks: { afterResponse: [() => {}, 42] } },
      { hooks: 'all' },
      { auth: {} },
      { auth: { origins: [window.fault], token: () => 't', refresh: 'soon' } },
      { auth: { origins: [window.fault], token: () => 't', scheme: 'Bearer token' } },
      { auth: 'secret' },
    ];
    const created = [];
    for (const options of bad) {
      created.push(await window.stormguard.createClient(options).then(() => 'created', (e) => `${e.name}:${e.option}`));
    }
    const root = await window.stormguard.createClient();
    const extended = bad.map((options) => {
      try {
        root.extend(options);
        return 'extended';
      } catch (e) {
        return `${e.name}:${e.option}`;
      }
    });
    return { created, extended };
  });
  const expected = [
    'OptionsError:hooks.beforeRequest', 'OptionsError:hooks.afterResponse', 'OptionsError:hooks',
    'OptionsError:auth.token', 'OptionsError:auth.refresh', 'OptionsError:auth.scheme', 'OptionsError:auth',
  ];
  assert.deepEqual(r.created, expected);
  assert.deepEqual(r.extended, expected);
});
