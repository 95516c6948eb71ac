// client.fetch() as a drop-in for the host's fetch (issue 24): it rejects
// as the native fetch does, reads its input as the Request constructor does
// and sends every field, and can be installed as the global fetch. request()
// sends every FetchInit field. Each scenario runs in Chromium (the package as
// plain ESM, calls cross-origin to the fault server) and, where the host
// matters, in Node; the Web Platform Tests' fetch/api assertions these
// encode are facts about fetch, checked against the host's own fetch side
// by side wherever one exists.
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
  globalThis.stormguard = await import('../../pkg/node.js');
});

after(async () => {
  await browser?.close();
  await servers?.close();
});

/** `scenario(fault, ...args)` in the page and (unless `chromiumOnly`) in Node: both results. */
async function both(scenario, ...args) {
  const chromium = await page.evaluate(scenario, [servers.fault, ...args]);
  const node = await scenario([servers.fault, ...args]);
  return { chromium, node };
}
const inPage = (scenario, ...args) => page.evaluate(scenario, [servers.fault, ...args]);

const log = async (id) => (await (await fetch(`${servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

// Shared by the scenarios below, which run in the page too: each one is
// self-contained (page.evaluate sends its source).

test('network failure, open circuit, full queue: TypeError with the host\'s message, cause the StormguardError', async () => {
  const results = await both(async ([fault]) => {
    const { createClient, NetworkError, CircuitOpenError, QueueFullError } = globalThis.stormguard ?? window.stormguard;
    const seen = (e, C) => ({
      isTypeError: e instanceof TypeError, ctor: e?.constructor === TypeError, message: e?.message,
      cause: e?.cause instanceof C, code: e?.cause?.code, attempts: e?.cause?.attempts,
    });
    const refused = 'http://127.0.0.1:1/';
    const native = await fetch(refused).catch((e) => e);
    const client = await createClient({ retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 }, breaker: false, crossTab: false });
    const network = seen(await client.fetch(refused).catch((e) => e), NetworkError);
    const breaking = await createClient({ retry: false, breaker: { consecutiveFailures: 1, openMs: 60000, maxOpenMs: 60000 }, crossTab: false });
    const id = `fn-circuit-${typeof window === 'object' ? 'page' : 'node'}`;
    const first = await breaking.fetch(`${fault}/status/503?id=${id}`);
    const e = await breaking.fetch(`${fault}/status/503?id=${id}`).catch((x) => x);
    const circuit = { ...seen(e, CircuitOpenError), retryInMs: e?.cause?.retryInMs > 0, status: first.status };
    const narrow = await createClient({ concurrency: { max: 1, queue: 0 }, retry: false, breaker: false, crossTab: false });
    const ctl = new AbortController();
    const hanging = narrow.fetch(`${fault}/hang?id=fn-queue`, { signal: ctl.signal }).catch(() => {});
    const queue = seen(await narrow.fetch(`${fault}/echo?id=fn-queue`).catch((x) => x), QueueFullError);
    ctl.abort();
    await hanging;
    return { nativeMessage: native.message, network, circuit, queue };
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r.network, {
      isTypeError: true, ctor: true, message: r.nativeMessage, cause: true, code: 'NETWORK', attempts: 2,
    }, host);
    assert.deepEqual(r.circuit, {
      isTypeError: true, ctor: true, message: r.nativeMessage, cause: true, code: 'CIRCUIT_OPEN', attempts: 0,
      retryInMs: true, status: 503,
    }, host);
    assert.deepEqual(r.queue, {
      isTypeError: true, ctor: true, message: r.nativeMessage, cause: true, code: 'QUEUE_FULL', attempts: 0,
    }, host);
  }
  assert.equal(results.chromium.nativeMessage, 'Failed to fetch');
  for (const host of ['page', 'node']) assert.equal((await log(`fn-circuit-${host}`)).length, 1, `${host}: the open circuit sent nothing`);
});

test('attempt timeout and deadline: DOMException TimeoutError (as AbortSignal.timeout gives), cause TimeoutError', async () => {
  const results = await both(async ([fault]) => {
    const { createClient, TimeoutError } = globalThis.stormguard ?? window.stormguard;
    const seen = (e) => ({
      dom: e instanceof DOMException, name: e?.name, code: e?.code,
      cause: e?.cause instanceof TimeoutError, phase: e?.cause?.phase,
    });
    const client = await createClient({ timeoutMs: 100, retry: false, crossTab: false });
    const attempt = seen(await client.fetch(`${fault}/hang?id=fn-timeout`).catch((e) => e));
    const deadline = seen(await client.fetch(`${fault}/hang?id=fn-timeout`, { timeoutMs: 5000, deadlineMs: 100 }).catch((e) => e));
    const platform = await fetch(`${fault}/hang?id=fn-timeout`, { signal: AbortSignal.timeout(50) }).catch((e) => e);
    return { attempt, deadline, platform: { dom: platform instanceof DOMException, name: platform.name, code: platform.code } };
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r.attempt, { ...r.platform, cause: true, phase: 'attempt' }, host);
    assert.deepEqual(r.deadline, { ...r.platform, cause: true, phase: 'deadline' }, host);
    assert.equal(r.platform.name, 'TimeoutError');
  }
});

test('caller abort: the signal\'s reason itself, rejected in the abort as the native fetch rejects', async () => {
  const results = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const client = await createClient({ crossTab: false });
    const run = async (f) => {
      const out = {};
      // abort() without a reason: a DOMException AbortError (code 20), the signal's reason.
      let ctl = new AbortController();
      let p = f(`${fault}/hang?id=fn-abort`, { signal: ctl.signal });
      await new Promise((r) => setTimeout(r, 50));
      ctl.abort();
      let e = await p.catch((x) => x);
      out.plain = { same: e === ctl.signal.reason, dom: e instanceof DOMException, name: e.name, code: e.code };
      // abort(reason): that value, untouched (a string, an Error).
      for (const reason of ['enough', new RangeError('mine')]) {
        ctl = new AbortController();
        p = f(`${fault}/hang?id=fn-abort`, { signal: ctl.signal });
        await new Promise((r) => setTimeout(r, 20));
        ctl.abort(reason);
        e = await p.catch((x) => x);
        out[typeof reason] = e === reason;
      }
      // The rejection's reaction runs before a microtask queued after abort().
      ctl = new AbortController();
      p = f(`${fault}/hang?id=fn-abort`, { signal: ctl.signal });
      await new Promise((r) => setTimeout(r, 20));
      const order = [];
      const settled = p.catch(() => order.push('rejected'));
      ctl.abort();
      await Promise.resolve();
      order.push('next microtask');
      await settled;
      out.inAbort = order;
      // An already aborted signal: a promise already rejected (WPT "Already
      // aborted signal rejects immediately").
      const already = [];
      await Promise.all([
        f(`${fault}/echo?id=fn-abort-already`, { signal: AbortSignal.abort() }).catch(() => already.push('fetch-reject')),
        Promise.resolve().then(() => already.push('next-microtask')),
      ]);
      out.already = already;
      // The Request's own signal, and `signal: null` removing it.
      ctl = new AbortController();
      ctl.abort('gone');
      const req = new Request(`${fault}/echo?id=fn-abort-null`, { signal: ctl.signal });
      out.requestSignal = (await f(req).catch((x) => x)) === 'gone';
      out.signalNull = (await f(req, { signal: null })).status;
      return out;
    };
    return { native: await run((i, init) => fetch(i, init)), ours: await run((i, init) => client.fetch(i, init)) };
  });
  // Chromium rejects in the abort itself, as the spec says; Node 20's fetch a
  // few microtasks later, where ours is no later than the spec.
  const spec = { inAbort: ['rejected', 'next microtask'], already: ['fetch-reject', 'next-microtask'] };
  assert.deepEqual(results.chromium.ours, results.chromium.native, 'chromium');
  assert.deepEqual(results.node.ours, { ...results.node.native, ...spec }, 'node');
  for (const r of Object.values(results)) {
    assert.deepEqual(r.native.plain, { same: true, dom: true, name: 'AbortError', code: 20 });
    assert.deepEqual({ inAbort: r.ours.inAbort, already: r.ours.already }, spec);
    assert.equal(r.native.signalNull, 200);
  }
  assert.equal((await log('fn-abort-already')).length, 0);
  assert.equal((await log('fn-abort-null')).length, 4, 'signal: null sent the aborted Request (native and ours, both hosts)');
});

test("another realm's (an iframe's) Request, URL and AbortSignal are theirs; an init that is a function is a dictionary", async () => {
  const r = await inPage(async ([fault]) => {
    const { createClient } = window.stormguard;
    const client = await createClient({ retry: false, timeoutMs: 3000, crossTab: false });
    const frame = document.createElement('iframe');
    document.body.append(frame);
    const other = frame.contentWindow;
    // A Request of the iframe's realm whose signal is aborted in flight: rejected with its reason.
    const viaRequest = async (f) => {
      const ctl = new other.AbortController();
      const p = f(new other.Request(`${fault}/hang?id=fn-realm`, { signal: ctl.signal })).then(() => 'resolved', (e) => e);
      setTimeout(() => ctl.abort('realm stop'), 50);
      const e = await p;
      return e === 'realm stop' ? 'the reason' : String(e?.name ?? e);
    };
    // request() given the iframe's URL and, in its options, the iframe's signal.
    const ctl = new other.AbortController();
    const p = client.request(new other.URL(`${fault}/hang?id=fn-realm`), { signal: ctl.signal }).catch((e) => e);
    setTimeout(() => ctl.abort('request stop'), 50);
    const requested = await p;
    const echoed = await client.request(new other.URL(`${fault}/echo?id=fn-realm`));
    // WebIDL reads a dictionary from any object, a function too.
    const fnInit = async (f) => {
      const init = () => {};
      init.method = 'POST';
      init.body = 'from a function';
      const res = await f(`${fault}/echo?id=fn-realm`, init);
      const { method, body } = await res.json();
      return { method, body };
    };
    const out = {
      request: [await viaRequest((q) => fetch(q)), await viaRequest((q) => client.fetch(q))],
      requested: [requested?.name, requested?.reason],
      echoed: echoed.path,
      fnInit: [await fnInit(fetch), await fnInit(client.fetch)],
      options: await client.request(`${fault}/echo`, () => {}).catch((e) => `${e.name}:${e.option}`),
      shape: [client.fetch.name, client.fetch.length, fetch.name, fetch.length],
    };
    frame.remove();
    return out;
  });
  assert.deepEqual(r.request, ['the reason', 'the reason'], "the iframe's Request keeps its signal, as in native fetch");
  assert.deepEqual(r.requested, ['AbortError', 'request stop'], "request() listens to the iframe's signal");
  assert.equal(r.echoed, '/echo', "request() takes the iframe's URL");
  assert.deepEqual(r.fnInit[0], { method: 'POST', body: 'from a function' });
  assert.deepEqual(r.fnInit[1], r.fnInit[0], 'client.fetch reads a function init as native fetch does');
  assert.equal(r.options, 'OptionsError:options', "request()'s options stay an object");
  assert.deepEqual(r.shape, ['fetch', 1, 'fetch', 1], 'client.fetch is named and counts its arguments as fetch');
});

test('close(): DOMException AbortError, cause AbortError, in flight and after', async () => {
  const results = await both(async ([fault]) => {
    const { createClient, AbortError } = globalThis.stormguard ?? window.stormguard;
    const seen = (e) => ({ dom: e instanceof DOMException, name: e?.name, code: e?.code, cause: e?.cause instanceof AbortError, reason: e?.cause?.reason });
    const client = await createClient({ crossTab: false });
    const pending = client.fetch(`${fault}/hang?id=fn-close`).catch((e) => e);
    await new Promise((r) => setTimeout(r, 50));
    client.close();
    return { inFlight: seen(await pending), later: seen(await client.fetch(`${fault}/echo?id=fn-close`).catch((e) => e)) };
  });
  const closed = { dom: true, name: 'AbortError', code: 20, cause: true, reason: 'client closed' };
  for (const r of Object.values(results)) assert.deepEqual(r, { inFlight: closed, later: closed });
});

test('invalid input: the Request constructor\'s TypeError, as native fetch gives it, and nothing sent', async () => {
  const results = await both(async ([fault]) => {
    const { createClient, OptionsError } = globalThis.stormguard ?? window.stormguard;
    const client = await createClient({ crossTab: false });
    const u = `${fault}/echo?id=fn-invalid`;
    const stream = () => new ReadableStream({ start(c) { c.enqueue(new Uint8Array([1])); c.close(); } });
    const cases = {
      'unparsable URL': ['http://[bad/'],
      'bad port': [`${fault.replace(/:\d+$/, ':99999')}/echo?id=fn-invalid`],
      'URL with userinfo': [u.replace('http://', 'http://user:secret@')],
      'forbidden method': [u, { method: 'CONNECT' }],
      'invalid method token': [u, { method: 'B A D' }],
      'mode navigate': [u, { mode: 'navigate' }],
      'bad mode': [u, { mode: 'bogus' }],
      'bad cache': [u, { cache: 'bogus' }],
      'only-if-cached without same-origin': [u, { cache: 'only-if-cached' }],
      'bad credentials': [u, { credentials: 'bogus' }],
      'bad redirect': [u, { redirect: 'bogus' }],
      'bad referrerPolicy': [u, { referrerPolicy: 'bogus' }],
      'bad priority': [u, { priority: 'urgent' }],
      'HEAD with a body': [u, { method: 'HEAD', body: 'x' }],
      'GET with a body': [u, { body: 'x' }],
      'stream body without duplex': [u, { method: 'POST', body: stream() }],
      'signal not a signal': [u, { signal: {} }],
      'init not a dictionary': [u, 'nope'],
    };
    const out = {};
    for (const [name, args] of Object.entries(cases)) {
      // Node's fetch has no `priority` member yet: it would send this one.
      if (name === 'bad priority' && typeof window !== 'object') continue;
      const native = await fetch(...args).then(() => 'resolved', (e) => e.constructor.name);
      const e = await client.fetch(...args).then(() => null, (x) => x);
      out[name] = { native, ours: e?.constructor.name, isTypeError: e instanceof TypeError };
    }
    const own = await client.fetch(u, { timeoutMs: 'soon' }).catch((e) => e);
    out['own option'] = { ours: own.constructor.name, isOptions: own instanceof OptionsError, option: own.option };
    const getter = new Error('from a getter');
    out['throwing getter'] = (await client.fetch(u, { get method() { throw getter; } }).catch((e) => e)) === getter;
    out.stats = client.stats().requests;
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    const { stats, 'own option': own, 'throwing getter': getter, ...cases } = r;
    for (const [name, c] of Object.entries(cases)) {
      assert.equal(c.native, 'TypeError', `${host}: native fetch, ${name}`);
      assert.deepEqual({ ours: c.ours, isTypeError: c.isTypeError }, { ours: 'TypeError', isTypeError: true }, `${host}: ${name}`);
    }
    assert.deepEqual(own, { ours: 'OptionsError', isOptions: true, option: 'timeoutMs' }, host);
    assert.equal(getter, true, `${host}: a getter's exception as thrown`);
    assert.equal(stats, 0, `${host}: no call was made`);
  }
  assert.equal((await log('fn-invalid')).length, 0, 'nothing was sent');
});

test("a request's own refusal (redirect 'error'/'manual', integrity, only-if-cached) is no breaker sample and not retried", async () => {
  // The Web Platform Tests' fetch/api cases that fail on purpose: with the
  // defaults they opened the breaker, and the page's next ordinary requests
  // met an open circuit. A breaker that opens at one failure shows it.
  const { chromium, node } = await both(async ([fault]) => {
    const { createClient, NetworkError } = globalThis.stormguard ?? window.stormguard;
    const where = typeof window === 'object' ? 'page' : 'node';
    const client = await createClient({
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
      breaker: { consecutiveFailures: 1, openMs: 60000, maxOpenMs: 60000 },
      crossTab: false,
    });
    const u = (id) => `${fault}/json?id=own-${where}-${id}`;
    const loop = (id) => `${fault}/redirect-loop?id=own-${where}-${id}`;
    const bad = 'sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';
    const cases = {
      'redirect error': [loop('redirect'), { redirect: 'error' }],
      'integrity': [u('integrity'), { integrity: bad }],
      'Request with integrity': [new Request(u('request-integrity'), { integrity: bad })],
    };
    // Node's fetch has no HTTP cache: it sends an only-if-cached request.
    if (where === 'page') cases['only-if-cached'] = [u('cached'), { cache: 'only-if-cached', mode: 'same-origin' }];
    const out = {};
    for (const [name, [input, init]] of Object.entries(cases)) {
      const e = await client.fetch(input, init).catch((x) => x);
      out[name] = { type: e instanceof TypeError, network: e?.cause instanceof NetworkError, attempts: e?.cause?.attempts, denied: e?.cause?.retryDenied };
    }
    // request(): the same, as a NetworkError.
    const e = await client.request(loop('request'), { redirect: 'error' }).catch((x) => x);
    out['request() redirect error'] = { type: e instanceof TypeError, network: e instanceof NetworkError, attempts: e?.attempts, denied: e?.retryDenied };
    // 'manual' with a Request that the host refuses as for 'error' would
    // be no sample either; here it resolves (an opaque redirect, or the
    // 302 itself in Node): an answer, whatever its status.
    const manual = await client.fetch(loop('manual'), { redirect: 'manual' }).then((r) => r.type, (x) => x?.cause?.code);
    // Nothing opened: the same endpoints still answer.
    const breakers = client.breakers().filter((b) => b.state !== 'closed').map((b) => b.key);
    const after = (await client.fetch(u('integrity'))).status;
    return { out, manual, breakers, after, where };
  });
  for (const r of [chromium, node]) {
    for (const [name, c] of Object.entries(r.out)) {
      assert.deepEqual(c, { type: name.startsWith('request()') ? false : true, network: true, attempts: 1, denied: undefined }, `${r.where}: ${name}`);
    }
    assert.deepEqual(r.breakers, [], `${r.where}: no breaker opened`);
    assert.equal(r.after, 200, r.where);
    assert.notEqual(r.manual, 'CIRCUIT_OPEN', r.where);
  }
  for (const where of ['page', 'node']) {
    for (const id of ['redirect', 'integrity', 'request-integrity', 'request']) {
      assert.equal((await log(`own-${where}-${id}`)).length, id === 'integrity' ? 2 : 1, `${where} ${id}: sent once`);
    }
  }
});

test("a GET whose network error repeats on every attempt opens nothing by itself: the next calls to its path go (WPT cors-*, redirect-location)", async () => {
  // The Web Platform Tests' fetch/api: a CORS failure, a redirect to a URL
  // with credentials or to an invalid location is a network error the host
  // cannot tell from an outage, retried twice. Its 3 failed attempts opened
  // the default breaker by themselves (consecutiveFailures 3), and the
  // test's next, valid requests to the same path met an open circuit. Here
  // the fault server resets the connection of every attempt of a call, then
  // answers the same path, twice over (redirect-location's order).
  const { chromium, node } = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const where = typeof window === 'object' ? 'page' : 'node';
    const client = await createClient({ retry: { baseDelayMs: 1, maxDelayMs: 1 }, crossTab: false });
    const u = (p, id) => `${fault}/drop?p=${p}&id=alone-${where}-${id}`;
    const out = [];
    for (const id of ['a', 'b']) {
      const e = await client.fetch(u(1, id)).catch((x) => x);
      out.push({ type: e instanceof TypeError, code: e?.cause?.code, attempts: e?.cause?.attempts });
      out.push(await client.fetch(u(0, `${id}-ok`)).then((r) => r.status, (x) => x?.cause?.code ?? String(x)));
    }
    const open = client.breakers().filter((b) => b.state !== 'closed').map((b) => b.key);
    return { out, open, where };
  });
  for (const r of [chromium, node]) {
    // The budget (3 retries + 10 % of the calls) leaves the second one retry.
    assert.deepEqual(r.out, [
      { type: true, code: 'NETWORK', attempts: 3 }, 200,
      { type: true, code: 'NETWORK', attempts: 2 }, 200,
    ], r.where);
    assert.deepEqual(r.open, [], r.where);
  }
});

test('fetch(): referrer and referrerPolicy are sent, on every attempt (Referer at the server equals native)', async () => {
  const r = await inPage(async ([fault]) => {
    const { createClient } = window.stormguard;
    const client = await createClient({ retry: { baseDelayMs: 1, maxDelayMs: 1 }, crossTab: false });
    const referer = async (f, input, init) => (await (await f(input, init)).json()).headers.referer ?? null;
    const u = `${fault}/echo?id=fn-referrer`;
    const cases = {
      'no-referrer': [u, { referrerPolicy: 'no-referrer' }],
      'unsafe-url': [u, { referrerPolicy: 'unsafe-url' }],
      'referrer ""': [u, { referrer: '' }],
      'referrer a page path': [u, { referrer: '/some/page?x=1', referrerPolicy: 'unsafe-url' }],
      'Request with no-referrer': [new Request(u, { referrerPolicy: 'no-referrer' })],
      'Request with unsafe-url': [new Request(u, { referrerPolicy: 'unsafe-url' })],
      'Request with a referrer': [new Request(u, { referrer: '/from/request', referrerPolicy: 'unsafe-url' })],
      'POST Request with unsafe-url': [new Request(u, { method: 'POST', body: 'x', referrerPolicy: 'unsafe-url' })],
      default: [u],
    };
    const out = {};
    for (const [name, [input, init]] of Object.entries(cases)) {
      const again = input instanceof Request ? input.clone() : input;
      out[name] = { native: await referer(fetch, again, init), ours: await referer((i, o) => client.fetch(i, o), input, init) };
    }
    // Every attempt: a GET retried after a 503 carries the policy both times.
    for (const policy of ['no-referrer', 'unsafe-url']) {
      await client.fetch(`${fault}/fail-first?n=1&id=fn-referrer-retry-${policy}`, { referrerPolicy: policy });
    }
    return { out, page: location.href, origin: location.origin };
  });
  for (const [name, c] of Object.entries(r.out)) assert.equal(c.ours, c.native, name);
  assert.equal(r.out['no-referrer'].native, null);
  assert.equal(r.out['unsafe-url'].native, r.page);
  assert.equal(r.out['Request with a referrer'].native, `${r.origin}/from/request`);
  assert.equal(r.out.default.native, `${r.origin}/`);
  for (const [policy, sent] of [['no-referrer', false], ['unsafe-url', true]]) {
    const entries = await log(`fn-referrer-retry-${policy}`);
    assert.equal(entries.length, 2, `${policy}: retried once`);
    assert.deepEqual(entries.map((e) => e.headers.includes('referer')), [sent, sent], policy);
  }
});

test('request() and client defaults send every FetchInit field: Referer, and cookies to a second origin with credentials', async () => {
  const r = await inPage(async ([fault]) => {
    const { createClient, OptionsError } = window.stormguard;
    // The fault server is another port of this host: cross-origin, same-site,
    // so its SameSite=Lax cookie goes along only with credentials 'include'.
    await fetch(`${fault}/cookie?id=fn-cookie&set=sg-user=u42`, { credentials: 'include' });
    const client = await createClient({ retry: false, crossTab: false });
    const cookie = (o) => client.request(`${fault}/cookie?id=fn-cookie`, o).then((b) => b.cookie);
    const out = {
      default: await cookie(),
      include: await cookie({ credentials: 'include' }),
      omit: await cookie({ credentials: 'omit' }),
      schema: (await client.schema(`${fault}/cookie?id=fn-cookie`, { credentials: 'include' })).data?.cookie,
      fetch: (await (await client.fetch(`${fault}/cookie?id=fn-cookie`, { credentials: 'include' })).json()).cookie,
    };
    const defaults = await createClient({ credentials: 'include', retry: false, crossTab: false });
    out.clientDefault = (await defaults.request(`${fault}/cookie?id=fn-cookie`)).cookie;
    out.callOverDefault = (await defaults.request(`${fault}/cookie?id=fn-cookie`, { credentials: 'omit' })).cookie;
    out.fetchDefault = (await (await defaults.fetch(`${fault}/cookie?id=fn-cookie`)).json()).cookie;
    // A POST (a Request with a body, sent as a clone per attempt) too.
    out.post = (await client.request(`${fault}/cookie?id=fn-cookie`, { method: 'POST', body: { a: 1 }, credentials: 'include' })).cookie;
    const referer = (o) => client.request(`${fault}/echo?id=fn-request-referer`, o).then((b) => b.headers.referer ?? null);
    out.referer = {
      noReferrer: await referer({ referrerPolicy: 'no-referrer' }),
      unsafeUrl: await referer({ referrerPolicy: 'unsafe-url' }),
      empty: await referer({ referrer: '' }),
      page: location.href,
    };
    // Invalid values: an OptionsError naming the field, nothing sent.
    const bad = async (o) => {
      const e = await client.request(`${fault}/echo?id=fn-fetchinit-bad`, o).catch((x) => x);
      return e instanceof OptionsError ? e.option : `not an OptionsError: ${e?.name}`;
    };
    out.invalid = {
      mode: await bad({ mode: 'bogus' }),
      navigate: await bad({ mode: 'navigate' }),
      cache: await bad({ cache: 'only-if-cached' }),
      credentials: await bad({ credentials: 7 }),
      keepalive: await bad({ keepalive: 'yes' }),
      priority: await bad({ priority: 'urgent' }),
      referrerPolicy: await bad({ referrerPolicy: 'never' }),
      noCorsPut: await bad({ mode: 'no-cors', method: 'PUT' }),
      // A no-cors request cannot carry the key: never retried as if it did.
      noCorsKey: await bad({ mode: 'no-cors', method: 'POST', idempotencyKey: 'k-1' }),
    };
    out.createClient = await createClient({ redirect: 'sideways' }).then(() => 'created', (e) => e.option);
    return out;
  });
  const sent = 'sg-user=u42';
  assert.deepEqual(
    { ...r, referer: undefined, invalid: undefined, createClient: undefined },
    {
      default: null, include: sent, omit: null, schema: sent, fetch: sent, clientDefault: sent,
      callOverDefault: null, fetchDefault: sent, post: sent, referer: undefined, invalid: undefined, createClient: undefined,
    },
  );
  assert.deepEqual(r.referer, { noReferrer: null, unsafeUrl: r.referer.page, empty: null, page: r.referer.page });
  assert.deepEqual(r.invalid, {
    mode: 'mode', navigate: 'mode', cache: 'cache', credentials: 'credentials', keepalive: 'keepalive',
    priority: 'priority', referrerPolicy: 'referrerPolicy', noCorsPut: 'mode', noCorsKey: 'idempotencyKey',
  });
  assert.equal(r.createClient, 'redirect');
  assert.equal((await log('fn-fetchinit-bad')).length, 0);
});

test('installed as the global fetch (unbound, or wrapped sync or async): one request on the wire per fetch()', async () => {
  const results = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const original = globalThis.fetch;
    const client = await createClient({ retry: false, crossTab: false, deadlineMs: 3000 });
    const installs = {
      unbound: client.fetch,
      wrapper: (i, init) => client.fetch(i, init),
      async: async (i, init) => {
        await new Promise((r) => setTimeout(r, 1));
        return client.fetch(i, init);
      },
    };
    const out = {};
    try {
      for (const [name, f] of Object.entries(installs)) {
        globalThis.fetch = f;
        const id = `fn-install-${name}-${typeof window === 'object' ? 'page' : 'node'}`;
        const before = client.stats().requests;
        const res = await fetch(`${fault}/echo?id=${id}`);
        const body = await res.json();
        // A POST (each attempt a Request) and a Request input too.
        await fetch(`${fault}/echo?id=${id}`, { method: 'POST', body: 'x' });
        await fetch(new Request(`${fault}/echo?id=${id}`));
        const count = (await (await original(`${fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight).length;
        out[name] = { status: res.status, path: body.path, count, calls: client.stats().requests - before };
      }
    } finally {
      globalThis.fetch = original;
    }
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    for (const [name, c] of Object.entries(r)) {
      assert.deepEqual(c, { status: 200, path: '/echo', count: 3, calls: 3 }, `${host}: ${name}`);
    }
  }
});

test('another client\'s attempts go through one given as its fetch with every protection; past an installed client, as a derived client\'s do', async () => {
  const results = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const original = globalThis.fetch;
    const where = typeof window === 'object' ? 'page' : 'node';
    const count = async (id) => (await (await original(`${fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight).length;
    const opts = { retry: false, crossTab: false, deadlineMs: 3000 };
    const outer = await createClient({ ...opts, headers: { 'x-outer': 'o' } });
    const out = {};
    // One client as another's `fetch` option, directly and wrapped.
    for (const [name, f] of Object.entries({ direct: outer.fetch, wrapped: (r) => outer.fetch(r) })) {
      const inner = await createClient({ ...opts, fetch: f, headers: { 'x-inner': 'i' } });
      const id = `fn-nest-${name}-${where}`;
      const before = outer.stats().requests;
      const body = await inner.request(`${fault}/echo?id=${id}`);
      out[name] = [body.headers['x-outer'], body.headers['x-inner'], outer.stats().requests - before, await count(id)];
    }
    try {
      // Installed as the global fetch: a second root client's attempts go past it, as those of
      // a client derived from it (sharing its slots) and its own do (README, "fetch() as a drop-in",
      // several installed clients: an attempt is protected and counted once, by the client that made it).
      globalThis.fetch = outer.fetch;
      const other = await createClient(opts);
      const derived = outer.extend({ headers: { 'x-derived': 'd' } });
      for (const [name, c] of Object.entries({ other, derived })) {
        const id = `fn-global-${name}-${where}`;
        const before = outer.stats().requests;
        const body = await c.request(`${fault}/echo?id=${id}`);
        out[name] = [body.headers['x-outer'], body.headers['x-derived'] ?? null, outer.stats().requests - before, await count(id)];
      }
    } finally {
      globalThis.fetch = original;
    }
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r, {
      direct: ['o', 'i', 1, 1],
      wrapped: ['o', 'i', 1, 1],
      // the other client's attempt goes on to the network as it was sent
      other: [undefined, null, 0, 1],
      // one call of the family (derived clients share stats()), one request on the wire
      derived: ['o', 'd', 1, 1],
    }, host);
  }
});

test('several clients installed as the global fetch, in any order: one fetch() is one request on the wire, counted by one client', async () => {
  const results = await both(async ([fault]) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const original = globalThis.fetch;
    const where = typeof window === 'object' ? 'page' : 'node';
    const count = async (id) => (await (await original(`${fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight).length;
    const opts = { retry: false, crossTab: false, deadlineMs: 3000 };
    const requests = (clients) => clients.map((c) => c.stats().requests);
    /** Three fetch() calls (a GET, a POST, a Request) through whatever is installed. */
    const three = async (id) => {
      const res = await fetch(`${fault}/echo?id=${id}`);
      await fetch(`${fault}/echo?id=${id}`, { method: 'POST', body: 'x' });
      await fetch(new Request(`${fault}/echo?id=${id}`));
      return res.status;
    };
    const out = {};
    try {
      // One after the other, each created while the one before was installed (a module re-run
      // by hot reload): each passes the others' attempts on.
      const a = await createClient(opts);
      globalThis.fetch = a.fetch;
      const b = await createClient(opts);
      globalThis.fetch = b.fetch;
      const c = await createClient(opts);
      globalThis.fetch = (i, init) => c.fetch(i, init);
      let id = `fn-several-chain-${where}`;
      out.chain = [await three(id), await count(id), ...requests([a, b, c])];
      // The first one closed (hot reload's dispose): it still passes the others' attempts on.
      a.close();
      id = `fn-several-closed-${where}`;
      out.closed = [await three(id), await count(id), ...requests([b, c])];
      // Created together, then installed one after the other.
      globalThis.fetch = original;
      const d = await createClient(opts);
      const e = await createClient(opts);
      globalThis.fetch = d.fetch;
      globalThis.fetch = async (i, init) => e.fetch(i, init);
      id = `fn-several-together-${where}`;
      out.together = [await three(id), await count(id), ...requests([d, e])];
      // A wrapper that calls an installed client with new arguments makes a new call.
      const wrapped = (i, init) => d.fetch(i, { ...init, headers: { 'x-wrapped': '1' } });
      id = `fn-several-wrapped-${where}`;
      const body = await (await wrapped(`${fault}/echo?id=${id}`)).json();
      out.wrapped = [body.headers['x-wrapped'], await count(id), ...requests([d, e])];
      for (const x of [b, c, d, e]) x.close();
    } finally {
      globalThis.fetch = original;
    }
    return out;
  });
  for (const [host, r] of Object.entries(results)) {
    assert.deepEqual(r, {
      chain: [200, 3, 0, 0, 3],
      closed: [200, 3, 0, 6],
      together: [200, 3, 0, 3],
      wrapped: ['1', 1, 1, 3],
    }, host);
  }
});

test('a wrapper installed before the client it calls: the attempt fails with a TypeError instead of looping for ever', async () => {
  // The client's global fetch at creation is the wrapper, which calls the client: each attempt
  // came back and was passed on to it again, one microtask after another, starving every timer
  // (the page froze). Run in a child process, so a loop is a timeout here, not a hung suite.
  const { execFile } = await import('node:child_process');
  const pkg = new URL('../../pkg/node.js', import.meta.url).href;
  const url = `${servers.fault}/echo?id=fn-wrapper-first`;
  const script = `
    const { createClient } = await import(${JSON.stringify(pkg)});
    let api;
    globalThis.fetch = (input, init) => api.fetch(input, init);
    api = await createClient({ retry: false, crossTab: false, deadlineMs: 2000 });
    const e = await fetch(${JSON.stringify(url)}).catch((x) => x);
    const timers = await new Promise((r) => setTimeout(() => r('timers run'), 10));
    console.log(JSON.stringify([e?.name, e?.cause?.name, timers]));
    process.exit(0);`;
  const out = await new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 20000 }, (err, stdout) => resolve(err ? `killed: ${err.signal ?? err.code}` : stdout.trim()));
  });
  assert.equal(out, JSON.stringify(['TypeError', 'NetworkError', 'timers run']));
  assert.equal((await log('fn-wrapper-first')).length, 0);
});

test('createClientSync installed as the global fetch before its wasm is in: one request on the wire', async () => {
  // The client at once, installed at once (README: "A client at once", "Installing it as the global
  // fetch"): its engine, made when the module arrived, took the global fetch of that moment, the client
  // itself, for the one it was created over, so every attempt came back to it and failed with "the
  // global fetch leads back to this client". Found by the Web Platform Tests' fetch/api run with the
  // client installed before the test files. A fresh realm each: the module must not be in yet.
  const { execFile } = await import('node:child_process');
  const pkg = new URL('../../pkg/node.js', import.meta.url).href;
  const scenario = async (stormguard, url) => {
    const api = stormguard.createClientSync({ retry: false, crossTab: false, deadlineMs: 5000 });
    globalThis.fetch = api.fetch;
    const got = await fetch(url, { method: 'POST', body: 'x' }).then((r) => r.status, (e) => e.message);
    return [got, api.stats().requests, api.stats().attempts];
  };
  const url = (host) => `${servers.fault}/echo?id=fn-sync-installed-${host}`;
  const script = `
    const scenario = ${scenario};
    console.log(JSON.stringify(await scenario(await import(${JSON.stringify(pkg)}), ${JSON.stringify(url('node'))})));
    process.exit(0);`;
  const node = await new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 20000 }, (err, stdout) => resolve(err ? `killed: ${err.signal ?? err.code}` : stdout.trim()));
  });
  assert.equal(node, JSON.stringify([200, 1, 1]), 'node');
  const fresh = await browser.newPage();
  try {
    await fresh.goto(`${servers.site}/README.md`);
    const chromium = await fresh.evaluate(async ([source, u]) => {
      const scenario = (0, eval)(`(${source})`);
      return scenario(await import('/pkg/index.js'), u);
    }, [String(scenario), url('page')]);
    assert.deepEqual(chromium, [200, 1, 1], 'chromium');
    // The same from a module that imports the package statically (as an app's bundle, or the WPT run's
    // install script, does): the client is made and installed in the same turn as the package's
    // evaluation, before any microtask. While the browser entry imported the engine's glue with
    // import() (b3edc6d until 9e1b9c1), the load awaited it before fetching the wasm, so the download
    // went through the global fetch of that moment, the client itself, which waited for that wasm: no
    // call ever went (the WPT run's config s timed out in every file).
    await fresh.goto(`${servers.site}/README.md`);
    await fresh.addScriptTag({
      type: 'module',
      content: `import * as stormguard from '/pkg/index.js';
        const scenario = ${scenario};
        scenario(stormguard, ${JSON.stringify(url('module'))}).then((r) => { window.installed = r; }, (e) => { window.installed = String(e); });`,
    });
    await fresh.waitForFunction(() => window.installed !== undefined, null, { timeout: 15000 });
    assert.deepEqual(await fresh.evaluate(() => window.installed), [200, 1, 1], 'chromium, installed at module scope');
  } finally {
    await fresh.close();
  }
  for (const host of ['node', 'page', 'module']) assert.equal((await log(`fn-sync-installed-${host}`)).length, 1, host);
});

test('two copies of the package (two bundles), both installed: one request on the wire', async (t) => {
  const { cpSync, mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'stormguard-copy-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(new URL('../../pkg', import.meta.url), dir, { recursive: true });
  const second = await import(join(dir, 'node.js'));
  assert.notEqual(second.createClient, globalThis.stormguard.createClient);
  const original = globalThis.fetch;
  const opts = { retry: false, crossTab: false, deadlineMs: 3000 };
  try {
    const a = await globalThis.stormguard.createClient(opts);
    globalThis.fetch = a.fetch;
    const b = await second.createClient(opts);
    globalThis.fetch = b.fetch;
    const id = 'fn-two-copies';
    const res = await fetch(`${servers.fault}/echo?id=${id}`, { method: 'POST', body: 'x' });
    assert.equal(res.status, 200);
    assert.deepEqual([a.stats().requests, b.stats().requests], [0, 1]);
    a.close();
    b.close();
  } finally {
    globalThis.fetch = original;
  }
  assert.equal((await log('fn-two-copies')).length, 1);
});

test('createClient({ fetch }): called with one Request per attempt, every field on it, retries included', async () => {
  const { createClient, OptionsError } = globalThis.stormguard;
  const seen = [];
  const transport = function (...args) {
    seen.push([...args.slice(0, 1).map((r) => r.clone()), ...args.slice(1)]);
    return fetch(args[0]);
  };
  const client = await createClient({ fetch: transport, retry: { baseDelayMs: 1, maxDelayMs: 1 }, crossTab: false, cache: 'no-store' });
  const id = 'fn-transport';
  const body = await client.request(`${servers.fault}/fail-first?n=1&id=${id}`, {
    credentials: 'include', mode: 'cors', redirect: 'error', referrerPolicy: 'origin', integrity: '', keepalive: true,
    headers: { 'x-app': 'a' },
  });
  assert.equal(body.attempt, 2);
  assert.equal(seen.length, 2);
  for (const args of seen) {
    assert.equal(args.length, 1);
    const [req] = args;
    assert.ok(req instanceof Request);
    assert.deepEqual(
      [req.credentials, req.mode, req.cache, req.redirect, req.referrerPolicy, req.keepalive, req.headers.get('x-app')],
      ['include', 'cors', 'no-store', 'error', 'origin', true, 'a'],
    );
    assert.ok(req.signal instanceof AbortSignal);
  }
  assert.notEqual(seen[0][0], seen[1][0], 'a Request per attempt');
  // fetch() too, a POST's body on each attempt.
  seen.length = 0;
  const res = await client.fetch(`${servers.fault}/fail-first?n=1&id=${id}-post`, { method: 'PUT', body: 'payload' });
  assert.equal(res.status, 200);
  assert.deepEqual(await Promise.all(seen.map(([req]) => req.text())), ['payload', 'payload']);
  await assert.rejects(createClient({ fetch: 'fetch' }), (e) => e instanceof OptionsError && e.option === 'fetch');
});
