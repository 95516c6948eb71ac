// shop.test.js
import { expect, test, vi } from 'vitest';
import { faultyFetch } from 'stormguard/testing';
import { createShop } from '../src/shop.js';

// Fake timers for the whole file, before any client exists (see the README).
vi.useFakeTimers();

test('the list shows the last good copy when the API is down', async () => {
  const fetch = faultyFetch([{ match: '/products', reply: [{ json: ['tea'] }, 503, 503, 503] }]);
  const shop = await createShop(fetch);
  expect((await shop.products()).data).toEqual(['tea']);

  const down = shop.products();
  await vi.advanceTimersByTimeAsync(3000); // the two backoffs: 1 s, then 2 s
  const result = await down;
  expect(result).toMatchObject({ source: 'cache', stale: true, data: ['tea'] });
  expect(result.error.status).toBe(503);
  expect(fetch.calls).toHaveLength(4);
});

test('an order is posted exactly once per key, through a reset and a 503', async () => {
  const fetch = faultyFetch([{ match: '/orders', reply: ['reset', 503, { status: 201, json: { id: 7 } }] }]);
  const shop = await createShop(fetch);
  const placed = shop.placeOrder({ sku: 'tea' }, 'order-1');
  await vi.advanceTimersByTimeAsync(999);
  expect(fetch.calls).toHaveLength(1); // the first backoff is not over
  await vi.advanceTimersByTimeAsync(2001);
  await expect(placed).resolves.toEqual({ id: 7 });
  expect(fetch.calls.map((c) => c.headers.get('idempotency-key'))).toEqual(['order-1', 'order-1', 'order-1']);
});

test('an open breaker refuses at once, and lets a probe through when its open period ends', async () => {
  const fetch = faultyFetch([{ match: '/stock', reply: [500, 500, 500] }]);
  const shop = await createShop(fetch);
  for (let i = 0; i < 3; i++) await expect(shop.api.request('/stock', { retry: false })).rejects.toMatchObject({ status: 500 });
  await expect(shop.api.request('/stock')).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
  expect(fetch.calls).toHaveLength(3);
  await vi.advanceTimersByTimeAsync(5000);
  await expect(shop.api.request('/stock')).resolves.toEqual({});
  expect(fetch.calls).toHaveLength(4);
});

test('a stalled body ends with the attempt timeout, on fake time', async () => {
  const fetch = faultyFetch([{ match: '/products', reply: ['stall', 'stall', 'stall'] }]);
  const shop = await createShop(fetch);
  const stalled = shop.api.request('/products', { timeoutMs: 2000, retry: false });
  const seen = expect(stalled).rejects.toMatchObject({ name: 'TimeoutError', phase: 'attempt' });
  await vi.advanceTimersByTimeAsync(2000);
  await seen;
});
