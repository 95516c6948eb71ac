// Retries that ride out a blip (issue 42): a backend that fails every
// request for a moment and is healthy again. A burst of failures from
// several endpoints of one origin holds their retries behind one probe;
// when it succeeds they go. Through the built package in Node and in
// Chromium against the fault server; rules and counts, never durations
// (the native simulation, tests/sim.rs, proves the timing in virtual time).
// `consecutiveFailures: 3` is a page's default; a server's is false, which
// turns the rule off (tests/e2e/server-defaults.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inBoth as both, serversAndChromium } from './browser.mjs';
import * as node from '../../pkg/node.js';

const env = serversAndChromium();

const log = async (id) => (await (await fetch(`${env.servers.fault}/_log?id=${id}`)).json()).filter((e) => !e.preflight);

/** Runs `scenario({ fault, id })` in Node and in a fresh page; resolves with both results. */
const inBoth = (scenario, id) => both(env, node, scenario, id);

test('20 endpoints of one origin, each failing once and then healthy: all 20 succeed, one retry each', async () => {
  // The rule this replaced opened every endpoint of the burst: 0 of 20, every one CircuitOpenError.
  const r = await inBoth(async ({ fault, id }) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    const client = await createClient({ budget: false, retry: { baseDelayMs: 200 }, breaker: { consecutiveFailures: 3 }, crossTab: false });
    const ends = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.request(`${fault}/fail-first/e${i}?n=1&id=${id}`).then((b) => b.attempt, (e) => e.name),
      ),
    );
    return { ends, stats: client.stats(), open: client.breakers().filter((b) => b.state !== 'closed').length };
  }, 'blip-20');
  for (const [where, x] of Object.entries(r)) {
    assert.deepEqual(x.ends, Array(20).fill(2), where);
    assert.equal(x.stats.attempts, 40, where);
    assert.equal(x.open, 0, where);
    assert.equal((await log(`blip-20-${where}`)).length, 40, where);
  }
});

test('a burst in an outage: only the origin\'s probes follow it, and its calls end on their attempts', async () => {
  // The storm benchmark's page load (2 calls to each of 3 endpoints) against endpoints that stay
  // down, budget off: the burst's retries wait for one probe at a time; each failed probe costs
  // every waiter an attempt, nothing sent; when their attempts run out they reject with
  // CircuitOpenError. An endpoint of the origin that did not fail in the burst is not held (its
  // success, an answer from the origin, ends the burst: a second client shows it).
  const r = await inBoth(async ({ fault, id }) => {
    const { createClient } = globalThis.stormguard ?? window.stormguard;
    // Equal jitter over 1 s: no retry before 500 ms, far past the responses' spread on a busy machine.
    const options = { budget: false, retry: { jitter: 'equal' }, breaker: { consecutiveFailures: 3 }, crossTab: false };
    const paths = ['/status/500', '/status/502', '/status/503'];
    const page = (client, at) => Promise.all(
      paths.flatMap((p) => [1, 2].map((n) => client.request(`${fault}${p}?id=${at}&n=${n}`).then(() => 'ok', (e) => e.name))),
    );
    const client = await createClient(options);
    const ends = await page(client, id);
    const second = await createClient(options);
    const burst = page(second, `${id}-2`);
    // Another endpoint, healthy, called once the burst is back.
    await new Promise((r) => setTimeout(r, 200));
    const other = await second.request(`${fault}/echo?id=${id}-other`).then(() => true, (e) => e.name);
    await burst;
    return { ends, other, attempts: client.stats().attempts };
  }, 'blip-outage');
  for (const [where, x] of Object.entries(r)) {
    assert.ok(x.ends.every((e) => e === 'HttpError' || e === 'CircuitOpenError'), `${where}: ${x.ends}`);
    assert.ok(x.ends.includes('CircuitOpenError'), `${where}: ${x.ends}`);
    const sent = (await log(`blip-outage-${where}`)).length;
    // The page's 6, then the probes: one per retry round (2 rounds of 3 attempts), and the probes'
    // endpoints, open by their own row after the third failure, may probe once more for themselves;
    // every call retrying freely sends 18.
    assert.ok(sent >= 7 && sent <= 9, `${where}: ${sent} requests`);
    assert.equal(x.attempts, sent, where);
    assert.equal(x.other, true, where);
  }
});

test('fetch(): a retry the budget denied that waited with a burst whose probe failed resolves with its Response', async () => {
  // A fresh client's page load against endpoints that stay down, the default budget (3 retries for
  // 6 calls): the 3 retries it denies wait with the burst; its probe fails (an outage), so their
  // denial stands. fetch() resolves with the last Response as with any denial (it ended in a
  // TimeoutError, with no error saved), request() rejects with the HttpError, retryDenied 'budget'.
  globalThis.stormguard = node;
  const options = { retry: { jitter: 'equal' }, breaker: { consecutiveFailures: 3 }, crossTab: false };
  const paths = ['/status/500', '/status/502', '/status/503'];
  const page = (call, id) => Promise.all(paths.flatMap((p) => [1, 2].map((n) => call(`${env.servers.fault}${p}?id=${id}&n=${n}`))));
  const viaFetch = await node.createClient(options);
  const fetched = await page((url) => viaFetch.fetch(url).then((r) => r.status, (e) => `${e.name}:${e.cause?.name}`), 'blip-denied-fetch');
  // The ones the budget denied resolve with their 5xx; the burst's others end on their attempts
  // behind the failed probes (TypeError, cause CircuitOpenError) or with their own last Response.
  assert.ok(fetched.every((x) => x >= 500 || x === 'TypeError:CircuitOpenError'), `${fetched}`);
  assert.ok(fetched.filter((x) => x >= 500).length >= 3, `${fetched}`);
  const viaRequest = await node.createClient(options);
  const requested = await page(
    (url) => viaRequest.request(url).then(() => 'ok', (e) => `${e.name}:${e.retryDenied ?? ''}`),
    'blip-denied-request',
  );
  assert.ok(requested.filter((e) => e === 'HttpError:budget').length >= 3, `${requested}`);
});
