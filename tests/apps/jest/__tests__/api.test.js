/**
 * @jest-environment node
 */
// API code tested in the node environment, with no configuration: the test
// file's `import` becomes require() under babel-jest, which loads the
// package's CommonJS build.
import { createClient, HttpError, isStormguardError } from 'stormguard';

const FAULT = process.env.STORMGUARD_FAULT_URL;
const RUN = Date.now().toString(36); // the fault server keeps per-id counters: one set per run

test('a GET retried through a failure, in the node environment', async () => {
  const api = await createClient({ baseUrl: FAULT, retry: { baseDelayMs: 5 }, crossTab: false });
  const body = await api.request(`/fail-first?n=1&id=jest-node-${RUN}`);
  expect(body.attempt).toBe(2);
  expect(api.stats().attempts).toBe(2);
  api.close();
});

test('errors are the exported classes', async () => {
  const api = await createClient({ baseUrl: FAULT, retry: false });
  const e = await api.request(`/status/404?id=jest-404-${RUN}`).catch((x) => x);
  expect(e).toBeInstanceOf(HttpError);
  expect(isStormguardError(e)).toBe(true);
  expect(e.status).toBe(404);
  api.close();
});

test('the wasm option names the file it could not read', async () => {
  // A fresh module registry: the wasm is loaded once per realm, by the first createClient.
  await jest.isolateModulesAsync(async () => {
    const { createClient: fresh } = require('stormguard');
    await expect(fresh({ wasm: '/nonexistent/stormguard_bg.wasm' })).rejects.toMatchObject({
      name: 'OptionsError',
      option: 'wasm',
      message: expect.stringContaining('/nonexistent/stormguard_bg.wasm'),
    });
  });
});
