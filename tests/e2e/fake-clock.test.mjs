// Fake timers come and go (Vitest's and Jest's useFakeTimers / useRealTimers
// around each test), while the engine keeps one host timer per realm for all
// its alarms (src/web/runtime/alarm.rs). A host timer set on a clock that is
// then thrown away never fires: every later alarm due after it waited for it
// for ever, so a call's timeout never came (issue 41: stormguard/testing under
// fake timers). Each test here swaps the clock under a pending host timer.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, TimeoutError } from '../../pkg/node.js';
import { faultyFetch } from '../../pkg/testing.js';

const api = 'http://api.test';
const flush = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

test('a host timer left on a fake clock that is thrown away holds no later timeout', { timeout: 15_000 }, async () => {
  const fetch = faultyFetch([{ match: '/stall', reply: ['stall'] }]);
  const client = await createClient({ crossTab: false, fetch, retry: false, timeoutMs: 1000 });
  mock.timers.enable({ apis: ['setTimeout'] });
  // Answered at once: its attempt's 1000 ms timeout armed the host timer on the fake clock.
  assert.deepEqual(await client.request(`${api}/ok`), {});
  mock.timers.reset();
  // Real timers again: a stalled body must time out after 1500 ms, later than the lost timer's time.
  // (The engine's host timer is unref'd: an app's own work keeps the process alive, here an interval.)
  const alive = setInterval(() => {}, 1000);
  try {
    await assert.rejects(client.request(`${api}/stall`, { timeoutMs: 1500 }), (e) => e instanceof TimeoutError && e.phase === 'attempt');
  } finally {
    clearInterval(alive);
    client.close();
  }
});

test('fake timers installed under a pending real host timer: the next timeout is on the fake clock', { timeout: 15_000 }, async () => {
  const fetch = faultyFetch([{ match: '/stall', reply: ['stall'] }]);
  const client = await createClient({ crossTab: false, fetch, retry: false });
  // Real timers: the default 6000 ms timeout arms the host timer on the real clock.
  assert.deepEqual(await client.request(`${api}/ok`), {});
  mock.timers.enable({ apis: ['setTimeout'] });
  let settled;
  client.request(`${api}/stall`, { timeoutMs: 8000 }).catch((e) => { settled = e; });
  await flush();
  for (let i = 0; i < 81 && !settled; i++) {
    mock.timers.tick(100);
    await flush();
  }
  mock.timers.reset();
  assert.ok(settled instanceof TimeoutError, `the 8000 ms timeout fired on the fake clock: ${settled}`);
  client.close();
});
