// Habits users bring from ky and axios (issue 25, items 4 and 5), through the
// built package in Node and in Chromium against the fault server:
// `HttpError.data` for JSON error bodies, `undefined` skipped in `query` and
// `headers`, and `validate` with a predicate or a Standard Schema
// (hand-written here, as any library's `~standard` object). Each scenario is
// one function run in both hosts (`globalThis.stormguard` is the package in
// either).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { inBoth as both, serversAndChromium } from './browser.mjs';
import * as node from '../../pkg/node.js';

const env = serversAndChromium();

/** Runs `scenario({ fault, id })` in Node and in a fresh page; resolves with both results. */
const inBoth = (scenario, id) => both(env, node, scenario, id);

const requests = async (id) =>
  (await (await fetch(`${env.servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight).length;

describe('undefined in query and headers', () => {
  test('skipped in query and headers; a call\'s undefined header removes the client\'s', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient({ headers: { 'x-client': 'c', 'x-keep': 'k', 'x-unset': undefined } });
      const echo = `${fault}/echo?id=${id}`;
      const r = await c.request(echo, {
        query: { page: 2, q: undefined, all: true },
        headers: { 'x-client': undefined, 'x-call': 'call', 'x-none': undefined },
      });
      const own = await c.request(echo, { query: [['a', '1']], headers: new Headers({ 'x-call': 'h' }) });
      const names = (h) => Object.keys(h).filter((k) => k.startsWith('x-')).sort();
      const out = {
        search: r.search, headers: names(r.headers), keep: r.headers['x-keep'], call: r.headers['x-call'],
        ownHeaders: names(own.headers),
      };
      c.close();
      return out;
    }, 'v-undef');
    for (const [host, r] of Object.entries(results)) {
      assert.deepEqual(r, {
        search: `?id=v-undef-${host}&page=2&all=true`,
        headers: ['x-call', 'x-keep'], keep: 'k', call: 'call',
        ownHeaders: ['x-call', 'x-client', 'x-keep'],
      });
    }
  });
});

describe('HttpError.data', () => {
  test('a JSON error body (application/json or +json) parsed; text, cut or broken JSON: absent', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient({ retry: false });
      const get = async (q) => {
        const e = await c.request(`${fault}/status/422?id=${id}&${q}`).catch((x) => x);
        return { name: e.name, body: e.body, data: e.data, has: 'data' in e };
      };
      const enc = encodeURIComponent;
      const out = {
        json: await get(`type=json&body=${enc('{"error":"bad sku","fields":["sku"]}')}`),
        problem: await get(`type=problem&body=${enc('{"type":"about:blank","title":"Unprocessable"}')}`),
        literal: await get(`type=json&body=${enc('null')}`),
        text: await get(`body=${enc('{"error":"bad sku"}')}`),
        broken: await get(`type=json&body=${enc('{"error":')}`),
        cut: await get(`type=json&body=${enc(JSON.stringify({ pad: 'x'.repeat(2000) }))}`),
        empty: await get('type=json&body='),
      };
      c.close();
      return out;
    }, 'v-data');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r.json, { name: 'HttpError', body: '{"error":"bad sku","fields":["sku"]}', data: { error: 'bad sku', fields: ['sku'] }, has: true });
      assert.deepEqual(r.problem.data, { type: 'about:blank', title: 'Unprocessable' });
      assert.deepEqual([r.literal.has, r.literal.data], [true, null]);
      for (const k of ['text', 'broken', 'cut', 'empty']) assert.equal(r[k].has, false, k);
      assert.equal(r.text.body, '{"error":"bad sku"}');
      assert.equal(r.cut.body.length, 1024);
    }
  });
});

describe('validate on request()', () => {
  test('a Standard Schema: resolves with its output; sync, async, and a schema that is also a function', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient({ retry: { baseDelayMs: 5 } });
      const echo = `${fault}/echo?id=${id}`;
      // What zod, valibot and arktype hand over: `~standard.validate` gives { value } or { issues }.
      const schema = (validate) => ({ '~standard': { version: 1, vendor: 'hand', validate } });
      const method = schema((v) => (typeof v?.method === 'string' ? { value: { verb: v.method.toLowerCase() } } : { issues: [{ message: 'no method' }] }));
      const asyncMethod = schema(async (v) => ({ value: { verb: v.method, later: true } }));
      // arktype's types are callable: the schema wins over the function.
      const callable = Object.assign(() => false, schema((v) => ({ value: v.path })));
      const out = {
        sync: await c.request(echo, { validate: method }),
        async: await c.request(echo, { validate: asyncMethod }),
        callable: await c.request(echo, { validate: callable }),
        predicate: (await c.request(echo, { validate: (v) => v.method === 'GET' })).path,
        nullIsNone: (await c.request(echo, { validate: null })).path,
      };
      c.close();
      return out;
    }, 'v-ok');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r.sync, { verb: 'get' });
      assert.deepEqual(r.async, { verb: 'GET', later: true });
      assert.equal(r.callable, '/echo');
      assert.equal(r.predicate, '/echo');
      assert.equal(r.nullIsNone, '/echo');
    }
  });

  test('a value that fails: ParseError with the issues (at most 20), sent once, no breaker failure', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient, ParseError } = globalThis.stormguard;
      // One failure opens the breaker, were it counted as one.
      const c = await createClient({ retry: { baseDelayMs: 5 }, breaker: { consecutiveFailures: 1 } });
      const echo = `${fault}/echo?id=${id}`;
      const schema = (validate) => ({ '~standard': { version: 1, vendor: 'hand', validate } });
      const issues = Array.from({ length: 25 }, (_, i) => ({ message: `issue ${i}`, path: ['items', i] }));
      const described = (e) => ({
        parse: e instanceof ParseError, name: e.name, code: e.code, message: e.message, issues: e.issues,
        cause: e.cause === undefined ? undefined : String(e.cause?.message ?? e.cause),
        causeName: e.cause?.name,
        requestId: e.requestId, attempts: e.attempts,
      });
      const fail = (validate) => c.request(echo, { validate }).then(() => 'resolved', described);
      const out = {
        issues: await fail(schema(() => ({ issues }))),
        asyncIssues: await fail(schema(async () => ({ issues: issues.slice(0, 2) }))),
        throws: await fail(schema(() => {
          throw new TypeError('schema broke');
        })),
        rejects: await fail(schema(() => Promise.reject(new RangeError('async schema broke')))),
        noResult: await fail(schema(() => undefined)),
        predicateFalse: await fail(() => false),
        predicateThrows: await fail(() => {
          throw new Error('predicate broke');
        }),
        predicateAsync: await fail(async () => true),
      };
      out.breaker = c.breakers()[0].state;
      out.failures = c.stats().failures;
      c.close();
      return out;
    }, 'v-fail');
    for (const [host, r] of Object.entries(results)) {
      const at = (k) => `${host} ${k}: ${JSON.stringify(r[k])}`;
      for (const k of ['issues', 'asyncIssues', 'throws', 'rejects', 'noResult', 'predicateFalse', 'predicateThrows', 'predicateAsync']) {
        assert.equal(r[k].parse, true, at(k));
        assert.equal(r[k].code, 'PARSE', at(k));
        assert.match(r[k].message, /^response rejected by validate\(\): GET http:\/\/[^/]+\/echo\?id=…$/, at(k));
        assert.equal(r[k].attempts, 1, at(k));
        assert.ok(r[k].requestId.length > 0, at(k));
      }
      assert.equal(r.issues.issues.length, 20);
      assert.deepEqual(r.issues.issues[19], { message: 'issue 19', path: ['items', 19] });
      assert.equal(r.issues.cause, undefined);
      assert.deepEqual(r.asyncIssues.issues.map((i) => i.message), ['issue 0', 'issue 1']);
      assert.equal(r.throws.cause, 'schema broke');
      assert.equal(r.throws.issues, undefined);
      assert.equal(r.rejects.cause, 'async schema broke');
      assert.equal(r.noResult.causeName, 'TypeError', 'a schema that answers nothing');
      assert.equal(r.predicateFalse.cause, undefined);
      assert.equal(r.predicateThrows.cause, 'predicate broke');
      assert.match(r.predicateAsync.cause, /not a promise/);
      assert.equal(r.breaker, 'closed', `${host}: no breaker failure`);
      assert.equal(r.failures, 8, host);
    }
    assert.equal(await requests('v-fail-node'), 8, 'each call sent once (not retried)');
    assert.equal(await requests('v-fail-page'), 8);
  });

  test('an abort or the deadline while an async schema answers ends the call; bad validate values are OptionsError', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient();
      const echo = `${fault}/echo?id=${id}`;
      const never = { '~standard': { version: 1, vendor: 'hand', validate: () => new Promise(() => {}) } };
      const described = (e) => ({ name: e.name, phase: e.phase, reason: e.reason, option: e.option });
      const ctl = new AbortController();
      const aborted = c.request(echo, { validate: never, signal: ctl.signal }).catch(described);
      setTimeout(() => ctl.abort('user left'), 150);
      const t0 = performance.now();
      const out = {
        aborted: await aborted,
        deadline: await c.request(echo, { validate: never, deadlineMs: 300 }).catch(described),
        deadlineMs: performance.now() - t0,
        invalid: [],
      };
      for (const validate of ['yes', 42, {}, { '~standard': {} }, { '~standard': { validate: 'x' } }]) {
        out.invalid.push(await c.request(echo, { validate }).catch(described));
      }
      c.close();
      return out;
    }, 'v-wait');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r.aborted, { name: 'AbortError', phase: undefined, reason: 'user left', option: undefined });
      assert.deepEqual(r.deadline, { name: 'TimeoutError', phase: 'deadline', reason: undefined, option: undefined });
      assert.ok(r.deadlineMs < 3000, `${r.deadlineMs} ms`);
      for (const e of r.invalid) assert.deepEqual([e.name, e.option], ['OptionsError', 'validate']);
    }
    assert.equal(await requests('v-wait-node'), 2, 'a bad validate sends nothing');
  });

  test('identical GETs share one request; each caller checks with its own validate', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient();
      const url = `${fault}/delay?ms=100&id=${id}`;
      const reject = { '~standard': { version: 1, vendor: 'hand', validate: () => ({ issues: [{ message: 'no' }] }) } };
      const [a, b] = await Promise.allSettled([
        c.request(url, { validate: reject }),
        c.request(url, { validate: (v) => v.ok === true }),
      ]);
      const out = { a: [a.status, a.reason?.name, a.reason?.attempts], b: [b.status, b.value?.ok], deduped: c.stats().deduped };
      c.close();
      return out;
    }, 'v-share');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r.a, ['rejected', 'ParseError', 1]);
      assert.deepEqual(r.b, ['fulfilled', true]);
      assert.equal(r.deduped, 1);
    }
    assert.equal(await requests('v-share-node'), 1);
    assert.equal(await requests('v-share-page'), 1);
  });
});

describe('validate on schema()', () => {
  test('data is the output; the copy stored is the response; a cached copy is checked before it is served', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient({ retry: false, storage: { prefix: `${id}:` } });
      const schema = (validate) => ({ '~standard': { version: 1, vendor: 'hand', validate } });
      const verb = schema(async (v) => (v?.method ? { value: { verb: v.method.toLowerCase() } } : { issues: [{ message: 'no method' }] }));
      const never = schema(() => ({ issues: [{ message: 'not this time' }] }));
      const o = { cacheKey: 'doc', fallback: { verb: 'built in' } };
      const good = await c.schema(`${fault}/echo?id=${id}`, { ...o, validate: verb });
      const down = `${fault}/status/503?id=${id}`;
      const cached = await c.schema(down, { ...o, validate: verb });
      const refused = await c.schema(down, { ...o, validate: never });
      const throws = await c.schema(down, { ...o, validate: schema(() => { throw new Error('broke'); }) });
      const stored = await c.schema(down, { cacheKey: 'doc' });
      const shape = (r) => ({ data: r.data, source: r.source, error: r.error?.name, status: r.error?.status, issues: r.error?.issues });
      const out = { good: shape(good), cached: shape(cached), refused: shape(refused), throws: shape(throws), stored: stored.data.method };
      c.close();
      return out;
    }, 'v-schema');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r.good, { data: { verb: 'get' }, source: 'network', error: undefined, status: undefined, issues: undefined });
      assert.deepEqual(r.cached, { data: { verb: 'get' }, source: 'cache', error: 'HttpError', status: 503, issues: undefined });
      assert.deepEqual(r.refused, { data: { verb: 'built in' }, source: 'fallback', error: 'HttpError', status: 503, issues: undefined });
      assert.deepEqual([r.throws.source, r.throws.error], ['fallback', 'HttpError']);
      assert.equal(r.stored, 'GET', 'the response is stored, not the output');
    }
  });

  test('a network copy that fails: ParseError with issues, not stored; the cached copy served', async () => {
    const results = await inBoth(async ({ fault, id }) => {
      const { createClient } = globalThis.stormguard;
      const c = await createClient({ retry: false, storage: { prefix: `${id}:` } });
      const schema = (validate) => ({ '~standard': { version: 1, vendor: 'hand', validate } });
      const url = (n) => `${fault}/echo?id=${id}&n=${n}`;
      const o = { cacheKey: 'doc' };
      await c.schema(url(1), o);
      const onlyOne = schema((v) => (v.query.n === '1' ? { value: v.query.n } : { issues: [{ message: `n is ${v.query.n}` }] }));
      const r = await c.schema(url(2), { ...o, validate: onlyOne });
      const after = await c.schema(`${fault}/status/503?id=${id}`, o);
      const out = { data: r.data, source: r.source, error: r.error?.name, issues: r.error?.issues, kept: after.data.query.n };
      c.close();
      return out;
    }, 'v-schema-bad');
    for (const r of [results.node, results.page]) {
      assert.deepEqual(r, { data: '1', source: 'cache', error: 'ParseError', issues: [{ message: 'n is 2' }], kept: '1' });
    }
  });
});
