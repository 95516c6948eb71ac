// Habits users bring from ky and axios (issue 25, items 4 and 5), through the
// built package in Node and in Chromium against the fault server:
// `HttpError.data` for JSON error bodies, and `undefined` skipped in `query`
// and `headers`. Each scenario is one function run in both hosts
// (`globalThis.stormguard` is the package in either).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, startServers, watchErrors } from './browser.mjs';
import * as node from '../../pkg/node.js';

let servers, browser;
before(async () => {
  servers = await startServers();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await servers?.close();
});

/** Runs `scenario({ fault, id })` in Node and in a fresh page; resolves with both results. */
async function inBoth(scenario, id) {
  globalThis.stormguard = node;
  const inNode = await scenario({ fault: servers.fault, id: `${id}-node` });
  const page = await browser.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${servers.site}/tests/e2e/pages/esm.html`);
    await page.waitForFunction(() => window.ready === true);
    const inPage = await page.evaluate(scenario, { fault: servers.fault, id: `${id}-page` });
    // (The console reports every non-2xx answer; those are the tests' own.)
    assert.deepEqual(errors.filter((e) => !/Failed to load resource: the server responded with a status/.test(e)), []);
    return { node: inNode, page: inPage };
  } finally {
    await page.close();
  }
}

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
