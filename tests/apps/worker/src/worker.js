// worker.js: the same import; fetch, crypto and the wasm come from the worker's own realm
import { createClient } from 'stormguard';

const api = createClient({ retry: { maxAttempts: 4 } });   // a promise: no top-level await, so the
self.onmessage = async ({ data }) => {                     // handler is set before any message arrives
  try {
    self.postMessage({ ok: true, body: await (await api).request(data.url) });
  } catch (e) {
    self.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
