// Fake timers per test, real timers after them: the engine moves its one host timer to the clock
// of the moment (src/web/runtime/alarm.rs), so no timeout waits for a timer left on a fake clock.
import { afterEach, expect, test, vi } from 'vitest';
import { createClient } from 'stormguard';
import { faultyFetch } from 'stormguard/testing';
afterEach(() => vi.useRealTimers());
for (const n of [1, 2, 3]) {
  test(`per-test fake timers, run ${n}`, async () => {
    vi.useFakeTimers();
    const fetch = faultyFetch([{ reply: [503] }]);
    const api = await createClient({ baseUrl: 'https://api.example.com', fetch, crossTab: false, timeoutMs: 1000, retry: { baseDelayMs: 100, jitter: 'none' } });
    const p = api.request('/x');
    await vi.advanceTimersByTimeAsync(500);
    await expect(p).resolves.toEqual({});
    api.close();
  }, 3000);
}
test('real timers after: a stalled body times out', async () => {
  const fetch = faultyFetch([{ reply: ['stall'] }]);
  const api = await createClient({ baseUrl: 'https://api.example.com', fetch, crossTab: false, timeoutMs: 1500, retry: false });
  await expect(api.request('/x')).rejects.toMatchObject({ name: 'TimeoutError' });
}, 5000);
