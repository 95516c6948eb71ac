// Issue 40 item 6: an error's message says which call failed, as ky's do (`HTTP 500 ...: GET
// https://host/path?id=…`): the method and URL, without the query's values, the fragment or a
// userinfo (README, "StormguardError" and "Threat model"). The rule: src/policy/href.rs `shown`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient } from '../../pkg/node.js';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.close());

const SECRET = 's3cret-value';

test('each call error names the method and URL, with no query value', async () => {
  const client = await createClient({ retry: false, crossTab: false, timeoutMs: 200 });
  const q = `id=msg&token=${SECRET}`;
  const http = await client.request(`${server.url}/status/500?${q}#frag`).catch((e) => e);
  assert.equal(http.message, `HTTP 500 Internal Server Error: GET ${server.url}/status/500?id=…&token=…`);
  const timeout = await client.request(`${server.url}/hang?${q}`, { method: 'PUT' }).catch((e) => e);
  assert.equal(timeout.message, `attempt timed out: PUT ${server.url}/hang?id=…&token=…`);
  const network = await client.request(`http://127.0.0.1:1/x?${q}`).catch((e) => e);
  assert.equal(network.message, 'network error: GET http://127.0.0.1:1/x?id=…&token=…');
  const parse = await client.request(`${server.url}/json?${q}`, { validate: () => false }).catch((e) => e);
  assert.match(parse.message, new RegExp(`: GET ${server.url}/json\\?id=…&token=…$`));
  const ac = new AbortController();
  const aborted = client.request(`${server.url}/hang?${q}&n=2`, { signal: ac.signal }).catch((e) => e);
  ac.abort();
  assert.equal((await aborted).message, `call aborted: GET ${server.url}/hang?id=…&token=…&n=…`);
  // An open circuit, a full queue: refused before anything is sent, named the same way.
  const breaking = await createClient({ retry: false, crossTab: false, breaker: { consecutiveFailures: 1 } });
  await breaking.request(`${server.url}/status/503?${q}`).catch(() => {});
  const open = await breaking.request(`${server.url}/status/503?${q}`).catch((e) => e);
  assert.equal(open.name, 'CircuitOpenError');
  assert.match(open.message, new RegExp(`: GET ${server.url}/status/503\\?id=…&token=…$`));
  const narrow = await createClient({ retry: false, crossTab: false, concurrency: { max: 1, queue: 0 } });
  const held = narrow.request(`${server.url}/hang?${q}&h=1`, { timeoutMs: 300 }).catch(() => {});
  const full = await narrow.request(`${server.url}/echo?${q}`, { method: 'DELETE' }).catch((e) => e);
  assert.equal(full.message, `concurrency queue is full: DELETE ${server.url}/echo?id=…&token=…`);
  await held;
  // None repeats the value, in the message, String(e) or the stack.
  for (const e of [http, timeout, network, parse, open, full]) {
    for (const text of [e.message, String(e), e.stack]) assert.ok(!text.includes(SECRET), text);
  }
  // Option errors are about the options, not a call: no URL added.
  const bad = await client.request(`${server.url}/echo`, { timeoutMs: -1 }).catch((e) => e);
  assert.equal(bad.message, 'invalid option timeoutMs: must be an integer from 1 to 2147483647');
  for (const c of [client, breaking, narrow]) c.close();
});
