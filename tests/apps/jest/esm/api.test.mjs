// Jest's native ESM mode: the package's `import` build (node condition).
import { createClient, TimeoutError } from 'stormguard';

const FAULT = process.env.STORMGUARD_FAULT_URL;
const RUN = Date.now().toString(36); // the fault server keeps per-id counters: one set per run

test('a GET retried through a failure, in ESM mode', async () => {
  const api = await createClient({ baseUrl: FAULT, retry: { baseDelayMs: 5 } });
  const body = await api.request(`/fail-first?n=1&id=jest-esm-${RUN}`);
  expect(body.attempt).toBe(2);
  api.close();
});

test('a timeout is a TimeoutError', async () => {
  const api = await createClient({ baseUrl: FAULT, timeoutMs: 100, retry: false });
  await expect(api.request(`/hang?id=jest-esm-hang-${RUN}`)).rejects.toBeInstanceOf(TimeoutError);
  api.close();
});
