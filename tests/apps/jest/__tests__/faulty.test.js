/**
 * @jest-environment node
 */
// stormguard/testing under Jest's fake timers, as the README shows:
// faultyFetch as the transport, time moved with advanceTimersByTimeAsync.
import { createClient } from 'stormguard';
import { faultyFetch } from 'stormguard/testing';

// Fake timers for the whole file, before any client exists. The engine runs
// its tasks on queueMicrotask: leave it (and nextTick) real.
jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick'] });

const client = (fetch) =>
  createClient({ baseUrl: 'https://shop.test/api', fetch, crossTab: false, retry: { baseDelayMs: 1000, jitter: 'none' } });

test('the retry waits for its backoff on the fake clock', async () => {
  const fetch = faultyFetch([{ match: '/items', reply: [503, { status: 429, retryAfter: 3 }] }], { json: ['ok'] });
  const api = await client(fetch);
  const call = api.request('/items');
  await jest.advanceTimersByTimeAsync(999);
  expect(fetch.calls).toHaveLength(1);
  await jest.advanceTimersByTimeAsync(1);
  expect(fetch.calls).toHaveLength(2);
  await jest.advanceTimersByTimeAsync(2999); // Retry-After: 3 holds the next retry
  expect(fetch.calls).toHaveLength(2);
  await jest.advanceTimersByTimeAsync(1);
  await expect(call).resolves.toEqual(['ok']);
  expect(fetch.calls.map((c) => c.reply)).toEqual([503, { status: 429, retryAfter: 3 }, 'fallback']);
});

test('a POST without a key is sent once; the deadline ends a call that gets no answer', async () => {
  const fetch = faultyFetch([{ match: '/orders', reply: ['reset'] }, { match: '/hang', reply: ['hang'] }]);
  const api = await client(fetch);
  await expect(api.request('/orders', { method: 'POST', body: { sku: 'tea' } })).rejects.toMatchObject({ name: 'NetworkError', retryDenied: 'method' });
  expect(fetch.calls).toHaveLength(1);
  const hung = expect(api.request('/hang', { deadlineMs: 4000, timeoutMs: 10000 })).rejects.toMatchObject({ name: 'TimeoutError', phase: 'deadline' });
  await jest.advanceTimersByTimeAsync(4000);
  await hung;
});
