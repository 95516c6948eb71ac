// A module worker that uses the package exactly as a page does.
import { createClient } from '/pkg/index.js';

self.onmessage = async ({ data: { fault } }) => {
  try {
    const client = await createClient({ retry: { baseDelayMs: 5 } });
    const body = await client.request(`${fault}/fail-first?n=1&id=worker`);
    self.postMessage({ ok: true, body, stats: client.stats() });
  } catch (e) {
    self.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
