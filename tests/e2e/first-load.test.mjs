// A client usable at once (issue 39 item 1; README, "A client at once"):
// createClientSync() gives a client whose calls may be made before the wasm is
// in; they wait for it within their own deadline and signal, and a failed load
// rejects them with OptionsError('wasm'). Each case runs in a fresh Node
// process (the wasm is loaded once per realm), with a `wasm` Response whose
// body the test releases when it chooses: the calls are made before it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium, openWithWasmHeld, root, startServers } from './browser.mjs';

const pkg = join(root, 'pkg');
const wasmFile = join(pkg, 'stormguard_bg.wasm');
let servers, app, browser;

before(async () => {
  servers = await startServers();
  app = mkdtempSync(join(tmpdir(), 'stormguard-first-load-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(pkg, join(app, 'node_modules/stormguard'), 'dir');
  writeFileSync(join(app, 'package.json'), '{"private": true}\n');
});
after(async () => {
  await browser?.close();
  await servers?.close();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** Runs `code` (after the prelude) in a fresh Node process; resolves with its parsed stdout. */
function node(code, flags = []) {
  const file = join(app, `t${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, `${prelude()}\n${code}`);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...flags, file], { cwd: app, timeout: 30000 }, (err, stdout, stderr) => {
      rmSync(file, { force: true });
      if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

// `slowWasm()`: `{ response, release }`, a wasm Response whose body arrives when `release()` is called.
// `report(e)`: what the test compares of an error. `tick()`: a few turns of the event loop.
const prelude = () => `
import { readFileSync } from 'node:fs';
import * as sg from 'stormguard';
const bytes = readFileSync(${JSON.stringify(wasmFile)});
const slowWasm = () => {
  let release;
  const body = new ReadableStream({ start(c) { release = () => { c.enqueue(bytes); c.close(); }; } });
  return { response: new Response(body, { headers: { 'content-type': 'application/wasm' } }), release: () => release() };
};
const report = (e) => ({ name: e?.name, code: e?.code, option: e?.option, phase: e?.phase, message: e?.message });
const tick = () => new Promise((r) => setTimeout(r, 50));
const out = (v) => process.stdout.write(JSON.stringify(v));
const echo = (id) => ${JSON.stringify(servers.fault)} + '/echo?id=' + id;
`;

test('calls made before the wasm is in wait for it and succeed; stats, breakers and on() before it', async () => {
  const r = await node(`
    const { response, release } = slowWasm();
    const api = sg.createClientSync({ wasm: response });
    const events = [];
    api.on('attempt', (e) => events.push(e.type));
    const off = api.on('retry', () => events.push('never'));
    off();
    const stats = api.stats();
    const breakers = api.breakers();
    let settled = 0;
    const calls = [api.request(echo('fl-a')), api.fetch(echo('fl-b')), api.schema(echo('fl-c'))];
    for (const p of calls) p.finally(() => settled++);
    const child = api.extend({ headers: { 'x-child': '1' } });
    const fromChild = child.request(echo('fl-d'));
    await tick();
    const before = settled;
    release();
    const [body, res, doc] = await Promise.all(calls);
    const childBody = await fromChild;
    const ready = (await api.ready) === api;
    out({
      stats, breakers, before, ready, method: body.method, status: res.status, source: doc.source,
      childHeader: childBody.headers['x-child'], events, after: api.stats().requests,
    });`);
  assert.equal(r.before, 0, 'no call settled before the wasm arrived');
  assert.equal(r.stats.requests, 0);
  assert.equal(r.stats.inFlight, 0);
  assert.equal(r.stats.amplification, 0);
  assert.deepEqual(r.breakers, []);
  assert.equal(r.method, 'GET');
  assert.equal(r.status, 200);
  assert.equal(r.source, 'network');
  assert.equal(r.childHeader, '1');
  assert.equal(r.ready, true);
  assert.deepEqual(r.events, ['attempt', 'attempt', 'attempt', 'attempt'], 'a listener added before the wasm sees the first calls');
  assert.equal(r.after, 4);
});

test('while the wasm loads: the caller abort rejects with AbortError, the deadline with TimeoutError, close() aborts', async () => {
  const r = await node(`
    const { response, release } = slowWasm();
    let hooked = 0;
    const api = sg.createClientSync({ wasm: response, hooks: { beforeRequest: [() => { hooked++; }] } });
    const gaveUp = [];
    api.on('giveUp', (e) => gaveUp.push(e.errorName));
    const c = new AbortController();
    const reason = new Error('left the page');
    const aborted = api.request(echo('fl-abort'), { signal: c.signal }).catch(report);
    const fetchAborted = api.fetch(echo('fl-abort'), { signal: c.signal }).catch((e) => e === reason);
    const requestAborted = api.fetch(new Request(echo('fl-abort'), { signal: c.signal })).catch((e) => e === reason);
    const preAborted = await api.request(echo('fl-abort'), { signal: AbortSignal.abort('gone') }).catch(report);
    c.abort(reason);
    const timedOut = await api.request(echo('fl-late'), { deadlineMs: 100 }).catch(report);
    const fetchTimedOut = await api.fetch(echo('fl-late'), { deadlineMs: 100 })
      .catch((e) => ({ name: e.name, dom: e instanceof DOMException, cause: e.cause?.code }));
    const schemaLate = await api.schema(echo('fl-late'), { deadlineMs: 100, fallback: { built: 'in' } });
    const schemaOut = { source: schemaLate.source, data: schemaLate.data, error: report(schemaLate.error) };
    // A client's deadlineMs bounds its load, as createClient's: the calls waiting get the load's error.
    const short = sg.createClientSync({ wasm: response, deadlineMs: 100 });
    const shortOut = await short.request(echo('fl-late')).catch(report);
    const child = api.extend({});
    // Its deadline passes, then its client is closed: it ended as late, and is counted so.
    const childLate = await child.request(echo('fl-late'), { deadlineMs: 100 }).catch(report);
    const closedChild = child.request(echo('fl-closed')).catch(report);
    child.close();
    const other = sg.createClientSync({ wasm: response });
    const closedRoot = other.request(echo('fl-closed')).catch(report);
    other.close();
    const afterClose = await other.request(echo('fl-closed')).catch(report);
    const closedStats = other.stats().requests;
    release();
    const body = await api.request(echo('fl-after'));
    // The calls aborted, timed out or closed meanwhile, counted by the engine as it counts its own (nothing sent).
    const { requests, attempts, failures, timeouts, fallbacks } = api.stats();
    out({ stats: [requests, attempts, failures, timeouts, fallbacks], gaveUp: gaveUp.sort(), hooked,
      aborted: await aborted, reasonKept: (await aborted).name === 'AbortError', fetchAborted: await fetchAborted,
      requestAborted: await requestAborted, preAborted, timedOut, fetchTimedOut, shortOut, schemaOut,
      childLate, closedChild: await closedChild, closedRoot: await closedRoot, afterClose, closedStats, method: body.method,
    });`);
  assert.equal(r.aborted.name, 'AbortError');
  assert.equal(r.fetchAborted, true, "fetch() rejects with the signal's reason, as the host's fetch");
  // 4 aborted by their caller, 4 past their deadline (schema()'s served its fallback; one in a derived client closed
  // after it), 1 of a derived client close() ended (its engine is the root's), then fl-after: no attempt but
  // fl-after's, and no timeout (that counts attempts).
  assert.deepEqual(r.stats, [10, 1, 9, 0, 1], 'the aborted, timed-out and closed calls are requests and failures of the engine');
  assert.deepEqual(r.gaveUp, [...Array(5).fill('AbortError'), ...Array(4).fill('TimeoutError')], 'each ends in the engine as it did');
  assert.deepEqual([r.childLate.name, r.childLate.phase], ['TimeoutError', 'deadline']);
  assert.equal(r.hooked, 1, "the client's beforeRequest hook runs for fl-after only: none for a call counted so");
  assert.equal(r.requestAborted, true, "a Request's own signal counts");
  assert.equal(r.preAborted.name, 'AbortError');
  assert.deepEqual([r.timedOut.name, r.timedOut.phase], ['TimeoutError', 'deadline']);
  assert.deepEqual(r.fetchTimedOut, { name: 'TimeoutError', dom: true, cause: 'TIMEOUT' });
  assert.deepEqual(r.schemaOut.data, { built: 'in' }, 'schema() does not reject for its deadline: its fallback');
  assert.equal(r.schemaOut.source, 'fallback');
  assert.deepEqual([r.schemaOut.error.name, r.schemaOut.error.phase], ['TimeoutError', 'deadline']);
  assert.deepEqual([r.shortOut.name, r.shortOut.option], ['OptionsError', 'wasm']);
  assert.match(r.shortOut.message, /did not finish within 100 ms/);
  assert.equal(r.closedChild.name, 'AbortError');
  assert.equal(r.closedRoot.name, 'AbortError');
  assert.equal(r.afterClose.name, 'AbortError');
  assert.equal(r.closedStats, 0);
  assert.equal(r.method, 'GET', 'the client works once the wasm is in');
});

test('a call that ended while the wasm loaded is counted without holding its body; at most 1024 such calls are kept', async () => {
  const r = await node(`
    const { response, release } = slowWasm();
    const api = sg.createClientSync({ wasm: response });
    const freed = [];
    const registry = new FinalizationRegistry((k) => freed.push(k));
    const tracked = (body, name) => (registry.register(body, name), body);
    const c = new AbortController();
    const bodies = {
      blob: () => new Blob([new Uint8Array(1 << 20)]),
      json: () => ({ big: 'x'.repeat(1 << 20) }),
      buffer: () => new Uint8Array(1 << 20),
      stream: () => new ReadableStream(),
      form: () => new URLSearchParams({ big: 'x'.repeat(1 << 20) }),
    };
    const calls = [];
    for (const [kind, make] of Object.entries(bodies)) {
      // No binding here holds a body: only the calls may.
      calls.push(api.request(echo('fl-body'), { method: 'POST', body: tracked(make(), kind + ' aborted'), signal: c.signal }));
      calls.push(api.request(echo('fl-body'), { method: 'POST', body: tracked(make(), kind + ' late'), deadlineMs: 100 }));
      calls.push(api.fetch(echo('fl-body'), { method: 'POST', body: tracked(make(), kind + ' fetch'), duplex: 'half', signal: c.signal }));
    }
    // Calls the engine refuses for their body are refused still, and not counted.
    calls.push(api.request(echo('fl-body'), { body: 'on a GET', deadlineMs: 100 }));
    calls.push(api.request(echo('fl-body'), { method: 'POST', body: { n: 1n }, deadlineMs: 100 }));
    c.abort();
    const ends = await Promise.all(calls.map((p) => p.then(() => 'answered', (e) => e.name)));
    for (let i = 0; i < 10 && freed.length < 15; i++) {
      globalThis.gc();
      await tick();
    }
    const held = Object.keys(bodies).flatMap((k) => [k + ' aborted', k + ' late', k + ' fetch']).filter((k) => !freed.includes(k));
    release();
    await api.request(echo('fl-body-after'));
    const { requests, attempts, failures } = api.stats();
    out({ held, ends, stats: [requests, attempts, failures] });`, ['--expose-gc']);
  assert.deepEqual(r.held, [], 'no body of a call that ended while the wasm loaded is held');
  assert.deepEqual(r.ends, [...Array(15).fill(0).map((_, i) => (i % 3 === 1 ? 'TimeoutError' : 'AbortError')), 'TimeoutError', 'TimeoutError']);
  // 15 ended (each a request and a failure), the 2 refused for their body none, then fl-body-after.
  assert.deepEqual(r.stats, [16, 1, 15], 'counted as before');
  // More than 1024 end while it loads: those past them are not counted (nor kept).
  const many = await node(`
    const { response, release } = slowWasm();
    const api = sg.createClientSync({ wasm: response });
    const gone = AbortSignal.abort();
    await Promise.all(Array.from({ length: 1100 }, () => api.request(echo('fl-many'), { signal: gone }).catch(() => {})));
    release();
    await api.request(echo('fl-many-after'));
    const { requests, failures } = api.stats();
    out([requests, failures]);`);
  assert.deepEqual(many, [1025, 1024], '1024 kept and counted, then the call after');
});

test("another copy of the package's attempts reaching this client while its wasm loads pass on at once, and are none of its calls", async () => {
  // A second copy of the package (its own module, as a second bundle on the page has), its engine in.
  const copy = join(app, 'copy');
  cpSync(pkg, copy, { recursive: true });
  const r = await node(`
    const { response, release } = slowWasm();
    const api = sg.createClientSync({ wasm: response });
    const host = globalThis.fetch;
    globalThis.fetch = api.fetch;
    const { createClient } = await import(${JSON.stringify(pathToFileURL(join(copy, 'node.js')).href)});
    // Its attempts as fetch(url, init), and (with a hook) as a Request.
    const plain = await createClient({ wasm: bytes });
    const hooked = await createClient({ wasm: bytes, hooks: { beforeRequest: [() => {}] } });
    const once = { timeoutMs: 2000, retry: { maxAttempts: 1 } };
    const passed = await Promise.all([plain.request(echo('fl-pass'), once), hooked.request(echo('fl-pass-hooked'), once)].map((p) =>
      p.then((v) => v.method, report)));
    const before = api.stats().requests;
    release();
    const next = await api.request(echo('fl-pass-next')).catch(report);
    globalThis.fetch = host;
    const { requests, attempts, failures } = api.stats();
    out({ passed, before, next: next.method ?? next.name, stats: [requests, attempts, failures] });`);
  assert.deepEqual(r.passed, ['GET', 'GET'], 'answered while the wasm was still held');
  assert.equal(r.before, 0);
  assert.equal(r.next, 'GET', 'the next call is sent and answered');
  // The other copy's attempts are not this client's calls: only the next one is counted.
  assert.deepEqual(r.stats, [1, 1, 0]);
});

test("createClientSync() returns without loading Node's fetch (undici), read while the module compiles; a host without it is told", async () => {
  const r = await node(`
    const undici = () => process.moduleLoadList.some((m) => m.includes('undici'));
    const api = sg.createClientSync();
    const atOnce = undici();
    const body = await api.request(echo('fl-undici'));
    out({ atOnce, after: undici(), method: body.method });`);
  assert.deepEqual(r, { atOnce: false, after: true, method: 'GET' });
  // A global read through a getter (as Node's fetch classes are) is checked once the module is in.
  const none = await node(`
    Object.defineProperty(globalThis, 'Headers', { get: () => undefined, configurable: true });
    out(report(await sg.createClient().catch((e) => e)));`);
  assert.equal(none.name, 'Error');
  assert.match(none.message, /lacks the global Headers, which stormguard needs/);
});

test('a failed load rejects the calls and ready with OptionsError(wasm) naming it; the next call loads again', async () => {
  const r = await node(`
    import { createServer } from 'node:http';
    // The wasm answers 404 the first time, the module after that.
    let asked = 0;
    const server = createServer((req, res) => {
      asked++;
      if (asked === 1) return res.writeHead(404).end('no');
      res.writeHead(200, { 'content-type': 'application/wasm' }).end(bytes);
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const where = 'http://127.0.0.1:' + server.address().port + '/sg.wasm';
    const api = sg.createClientSync({ wasm: where });
    const [request, fetched, schema, ready] = await Promise.all([
      api.request(echo('fl-fail')).catch(report),
      api.fetch(echo('fl-fail')).catch(report),
      api.schema(echo('fl-fail')).catch(report),
      api.ready.catch(report),
    ]);
    const body = await api.request(echo('fl-again'));
    server.close();
    out({ request, fetched, schema, ready, asked, method: body.method, isError: sg.isStormguardError(request) });`);
  for (const k of ['request', 'fetched', 'schema', 'ready']) {
    assert.deepEqual([r[k].name, r[k].option], ['OptionsError', 'wasm'], k);
    assert.match(r[k].message, /\/sg\.wasm failed with HTTP 404/, k);
  }
  assert.equal(r.method, 'GET');
  assert.equal(r.asked, 2);
});

test('invalid options never throw from createClientSync: the calls reject with the OptionsError', async () => {
  const r = await node(`
    const { response, release } = slowWasm();
    const loading = sg.createClientSync({ wasm: response, retry: { maxAttempts: 99 } });
    const badWasm = sg.createClientSync({ wasm: 42 });
    const badWasmCall = await badWasm.request(echo('fl-bad')).catch(report);
    let badEvent;
    try { loading.on('nope', () => {}); } catch (e) { badEvent = report(e); }
    const pending = loading.request(echo('fl-bad')).catch(report);
    release();
    const beforeIn = await pending;
    // Once the module is in, the client is made at once, and its options checked then.
    const bad = sg.createClientSync({ timeoutMs: -1 });
    const afterIn = await bad.request(echo('fl-bad')).catch(report);
    const good = sg.createClientSync({});
    const stats = good.stats();
    const body = await good.request(echo('fl-good'));
    out({ badWasmCall, badEvent, beforeIn, afterIn, method: body.method, ready: (await good.ready) === good });`);
  assert.deepEqual([r.badWasmCall.name, r.badWasmCall.option], ['OptionsError', 'wasm']);
  assert.deepEqual([r.badEvent.name, r.badEvent.option], ['OptionsError', 'event']);
  assert.deepEqual([r.beforeIn.name, r.beforeIn.option], ['OptionsError', 'retry.maxAttempts']);
  assert.deepEqual([r.afterIn.name, r.afterIn.option], ['OptionsError', 'timeoutMs']);
  assert.equal(r.method, 'GET');
  assert.equal(r.ready, true);
});

test('the hooks given a createClientSync client whose wasm fails serve the fallback with the load error', async () => {
  const { effectScope, nextTick } = await import('vue');
  const { useSchema } = await import('../../pkg/vue.js');
  const r = await node(`
    const api = sg.createClientSync({ wasm: '/nonexistent/stormguard_bg.wasm' });
    const e = await api.request(echo('fl-hook')).catch((e) => e);
    out(report(e));`);
  assert.deepEqual([r.name, r.option], ['OptionsError', 'wasm']);
  // In this realm the module may already be in: a client whose build fails is what the hook sees.
  const { createClientSync } = await import('../../pkg/node.js');
  const client = createClientSync({ retry: { maxAttempts: 99 } });
  const scope = effectScope();
  const [withFallback, without] = scope.run(() => [
    useSchema(client, `${servers.fault}/echo?id=fl-hook`, { fallback: { title: 'Built-in' } }),
    useSchema(client, `${servers.fault}/echo?id=fl-hook`),
  ]);
  for (let i = 0; i < 50 && (withFallback.loading.value || without.loading.value); i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(withFallback.data.value, { title: 'Built-in' });
  assert.equal(withFallback.source.value, 'fallback');
  assert.equal(withFallback.error.value?.option, 'retry.maxAttempts');
  assert.equal(without.source.value, 'none');
  // A call's own invalid option is the call's error, not a client that failed.
  const ok = createClientSync({});
  const own = scope.run(() => useSchema(ok, `${servers.fault}/echo?id=fl-hook`, { fallback: 1, timeoutMs: -1 }));
  for (let i = 0; i < 50 && own.loading.value; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(own.source.value, undefined);
  assert.equal(own.error.value?.option, 'timeoutMs');
  await nextTick();
  scope.stop();
});

/**
 * tests/e2e/pages/first-load.html, whose module script makes a client and a
 * call of `path` on the fault server at module scope, the wasm download held by the test:
 * `{ page, errors, answer }`, `answer(fn)` letting the download go on with `fn(route)`.
 */
function heldPage(context, path) {
  return openWithWasmHeld(context, `${servers.site}/tests/e2e/pages/first-load.html?url=${encodeURIComponent(`${servers.fault}${path}`)}`);
}

test('in a page: a call made at module scope before the wasm arrives succeeds; a 404 is the error of one that needs it', async () => {
  browser ??= await launchChromium();
  const context = await browser.newContext();
  try {
    // Its first attempt goes before the wasm (the boot build, tests/e2e/boot.test.mjs): a 2xx is its answer.
    const { page, errors, answer } = await heldPage(context, '/echo?id=fl-page');
    await page.waitForFunction(() => window.result !== undefined);
    assert.equal(await page.evaluate(() => window.result), 'GET');
    assert.equal(await page.evaluate(() => window.stats), 0);
    answer((route) => route.continue());
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
  const failing = await browser.newContext();
  try {
    // A 503 needs the engine (a retry): its failed load is the call's error.
    const { page, answer } = await heldPage(failing, '/fail-first?key=fl-page-404&n=5');
    answer((route) => route.fulfill({ status: 404, body: 'not here' }));
    await page.waitForFunction(() => window.result !== undefined);
    assert.match(await page.evaluate(() => window.result), /^OptionsError wasm: .*stormguard_bg\.wasm failed with HTTP 404/);
  } finally {
    await failing.close();
  }
});
