// The app under test: a small API module, as an app would write it. Its
// transport is the `fetch` option, so a test hands it faultyFetch.
import { createClient } from 'stormguard';

export async function createShop(fetch) {
  const api = await createClient({
    baseUrl: 'https://shop.test/api',
    fetch,
    retry: { baseDelayMs: 1000, jitter: 'none' },
    breaker: { consecutiveFailures: 3, openMs: 5000 },
    crossTab: false,
  });
  return {
    api,
    /** The product list: the last good copy when the API is down. */
    products: () => api.schema('/products', { fallback: [] }),
    /** An order, sent once per click whatever the network does. */
    placeOrder: (order, key) => api.request('/orders', { method: 'POST', body: order, idempotencyKey: key }),
  };
}
