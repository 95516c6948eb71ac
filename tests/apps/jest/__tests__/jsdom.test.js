// The default (jsdom) environment has no fetch, Request or Response:
// createClient says which globals are missing and how to get them, instead of
// a bare TypeError or ReferenceError. (TextDecoder, which jsdom also lacks, the
// CommonJS build takes from node:util.)
import { createClient } from 'stormguard';

test('createClient names the missing globals and the fix', async () => {
  expect(typeof fetch).toBe('undefined');
  const e = await createClient().catch((x) => x);
  expect(e).toBeInstanceOf(Error);
  expect(e.message).toMatch(/lacks the global fetch, Request, Response, which stormguard needs/);
  expect(e.message).toMatch(/testEnvironment to 'jest-fixed-jsdom'/);
});
