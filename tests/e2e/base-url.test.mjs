// README, "baseUrl" (issue 40, item 4): a relative input is appended to baseUrl's path as
// axios does, with or without baseUrl's trailing slash and the input's leading one; `..` may not
// climb above baseUrl's path (OptionsError 'url', nothing sent); an absolute URL is used as given;
// extend({ baseUrl }) joins the same way. The rule itself: src/policy/href.rs (native tests).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, OptionsError } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.close());

/** A client on `baseUrl` whose transport records each URL sent and answers {}. */
async function recording(baseUrl, options = {}) {
  const sent = [];
  const fetch = async (req) => {
    sent.push(req.url);
    return new Response('{}', { headers: { 'content-type': 'application/json' } });
  };
  const client = await createClient({ baseUrl, fetch, retry: false, crossTab: false, ...options });
  return { client, sent };
}

/** The URL `input` is sent to, or the OptionsError's option (nothing sent). */
async function sentTo({ client, sent }, input, options) {
  const before = sent.length;
  try {
    await client.request(input, options);
  } catch (e) {
    assert.ok(e instanceof OptionsError, `${input}: ${e?.name} ${e?.message}`);
    assert.equal(sent.length, before, `${input}: refused, yet sent`);
    return `OptionsError:${e.option}`;
  }
  return sent.at(-1);
}

const API = 'https://api.example.com';

test("both slash styles: '/users/42' and 'users/42' under 'https://api.example.com/v1' with or without its slash", async () => {
  for (const base of [`${API}/v1`, `${API}/v1/`]) {
    const c = await recording(base);
    for (const input of ['/users/42', 'users/42']) {
      assert.equal(await sentTo(c, input), `${API}/v1/users/42`, `${base} + ${input}`);
    }
    // Query strings: in the input, from the query option, or alone.
    assert.equal(await sentTo(c, '/users?id=1&q=a%20b'), `${API}/v1/users?id=1&q=a%20b`);
    assert.equal(await sentTo(c, 'users', { query: { page: 2 } }), `${API}/v1/users?page=2`);
    assert.equal(await sentTo(c, '?page=2'), `${API}/v1${base.endsWith('/') ? '/' : ''}?page=2`);
    // `//host` has no scheme: it stays under the base, never another host.
    assert.equal(await sentTo(c, '//evil.example/x'), `${API}/v1/evil.example/x`);
    // fetch() joins the same way.
    await c.client.fetch('/users/7');
    assert.equal(c.sent.at(-1), `${API}/v1/users/7`);
    c.client.close();
  }
  // A base at the origin's root.
  const root = await recording(`${API}`);
  assert.equal(await sentTo(root, '/users/42'), `${API}/users/42`);
  root.client.close();
});

test("'..' may move within baseUrl's path, never above it: OptionsError('url'), nothing sent", async () => {
  const c = await recording(`${API}/v1/`);
  assert.equal(await sentTo(c, 'users/../teams'), `${API}/v1/teams`);
  assert.equal(await sentTo(c, './users/./42'), `${API}/v1/users/42`);
  for (const climbs of ['..', '../v2/users', '/users/../../admin', 'users/%2e%2e/%2E%2E/x', 'a/..\\..\\x']) {
    assert.equal(await sentTo(c, climbs), 'OptionsError:url', climbs);
  }
  const e = await c.client.request('../v2').catch((x) => x);
  assert.match(e.message, /baseUrl/);
  // fetch() too: stormguard's own rule, so an OptionsError rather than the host's TypeError.
  const f = await c.client.fetch('../v2').catch((x) => x);
  assert.ok(f instanceof OptionsError && f.option === 'url', `${f?.name}`);
  assert.equal(c.sent.length, 2);
  c.client.close();
});

test('an absolute URL (with a scheme) is used as given', async () => {
  const c = await recording(`${API}/v1/`);
  assert.equal(await sentTo(c, 'https://other.example/x?y=1'), 'https://other.example/x?y=1');
  assert.equal(await sentTo(c, `${API}/elsewhere`), `${API}/elsewhere`);
  assert.equal(await sentTo(c, new URL('https://other.example/u')), 'https://other.example/u');
  await c.client.fetch('https://other.example/f');
  assert.equal(c.sent.at(-1), 'https://other.example/f');
  c.client.close();
});

test('extend({ baseUrl }) joins under its parent\'s the same way', async () => {
  const { client, sent } = await recording(`${API}/v1`);
  const users = client.extend({ baseUrl: 'users' });
  await users.request('42');
  await users.request('/43');
  const admin = client.extend({ baseUrl: '/admin/' }).extend({ baseUrl: 'audit' });
  await admin.request('log');
  const other = client.extend({ baseUrl: 'https://other.example/api' });
  await other.request('/x');
  assert.deepEqual(sent, [`${API}/v1/users/42`, `${API}/v1/users/43`, `${API}/v1/admin/audit/log`, 'https://other.example/api/x']);
  // A derived client's calls stay under its own baseUrl, and it cannot climb out of its parent's.
  assert.equal((await users.request('../teams').catch((e) => e)).option, 'url');
  assert.throws(() => client.extend({ baseUrl: '../v2' }), (e) => e instanceof OptionsError && e.option === 'baseUrl');
  client.close();
});

test('on the wire: both slash styles reach the same path of a real server', async () => {
  const id = 'base-url-wire';
  for (const base of [`${server.url}/status`, `${server.url}/status/`]) {
    const client = await createClient({ baseUrl: base, retry: false, crossTab: false });
    for (const input of [`/200?id=${id}`, `200?id=${id}`]) await client.request(input);
    client.close();
  }
  const log = (await (await fetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);
  assert.deepEqual(log.map((e) => e.path), Array(4).fill('/status/200'));
});
