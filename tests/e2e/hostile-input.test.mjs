// Hostile input from the places a page does not control (API.md, "Hostile
// hosts and input"), through the package's Node build against the fault
// server: another tab's BroadcastChannel messages (here another channel of
// the same name, as a second tab would hold), init objects shaped by
// JSON.parse or by prototypes, hand-set Idempotency-Key headers, and a
// breaker table filled with open breakers. Issue 14, items 4, 5, 6 and 9.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../server/server.mjs';
import { createClient, OptionsError, CircuitOpenError } from '../../pkg/node.js';
import { initSync } from '../../pkg/stormguard.js';

let server;
before(async () => {
  server = await startServer({ close: true });
});
after(() => server?.close());

const log = async (id) => (await (await fetch(`${server.url}/_log?id=${id}`)).json()).filter((e) => !e.preflight);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Another tab on the channel of storage prefix `prefix`. */
function peer(prefix) {
  const channel = new BroadcastChannel(`stormguard-tabs:${prefix}`);
  channel.unref(); // a failing test must not keep the process alive
  return {
    send: (msg) => channel.postMessage(msg),
    close: () => channel.close(),
  };
}

/** Waits until `cond()` holds (messages arrive asynchronously), at most 5 s. */
async function until(cond, what) {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// Item 4: the breaker table never stops tracking.
test('breaker table: a failing endpoint gets its breaker after 1000 peer-opened keys', async () => {
  const prefix = 'i14-table-peer:';
  const client = await createClient({
    retry: false, storage: { prefix }, breaker: { consecutiveFailures: 3, openMs: 60000, maxOpenMs: 60000 },
  });
  const tab = peer(prefix);
  for (let i = 0; i < 1000; i++) {
    tab.send({ r: 'another-tab', t: 'open', key: `GET https://api.example/item/${i}`, until: Date.now() + 60000, period: 2000 });
  }
  await until(() => client.breakers().some((b) => b.key.endsWith('/item/999')), 'the last peer open');
  assert.equal(client.breakers().length, 1000);
  const victim = `${server.url}/status/503`;
  const results = [];
  for (let i = 0; i < 20; i++) results.push(await client.request(`${victim}?id=i14-table-peer`).catch((e) => e));
  const sent = (await log('i14-table-peer')).length;
  assert.equal(sent, 3, `the victim sent ${sent} of 20 (its breaker opens after 3 failures in a row)`);
  assert.ok(results.slice(3).every((e) => e instanceof CircuitOpenError));
  const mine = client.breakers().find((b) => b.key === `GET ${victim}`);
  assert.equal(mine?.state, 'open');
  assert.equal(client.breakers().length, 1000, 'the table stays bounded');
  tab.close();
  client.close();
});

test('breaker table: a failing endpoint gets its breaker after 1000 opened per-id endpoints', async () => {
  const client = await createClient({
    retry: false, budget: false, concurrency: { max: 32, queue: 1000 }, crossTab: false,
    breaker: { consecutiveFailures: 1, openMs: 60000, maxOpenMs: 60000 },
  });
  const id = 'i14-table-own';
  // One endpoint per id, as per-id paths would be (the breaker key names
  // it); one failure opens each, to keep the test to 1000 calls.
  const opened = (i) =>
    client.request(`${server.url}/status/503?id=${id}&item=${i}`, { breakerKey: `GET /items/${i}` }).catch(() => {});
  for (let start = 0; start < 1000; start += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, k) => opened(start + k)));
  }
  const snap = client.breakers();
  assert.equal(snap.length, 1000);
  assert.ok(snap.every((b) => b.state === 'open'), 'all 1000 are open');
  const victimId = 'i14-table-own-victim';
  for (let i = 0; i < 20; i++) await client.request(`${server.url}/status/503?id=${victimId}`).catch(() => {});
  assert.equal((await log(victimId)).length, 1, 'the victim is cut off after its first failure');
  const mine = client.breakers().find((b) => b.key === `GET ${server.url}/status/503`);
  assert.equal(mine?.state, 'open');
  client.close();
});
