// worker.js: the same import; fetch, crypto and the wasm come from the worker's own realm
import { createClientSync } from 'stormguard';

const api = createClientSync({ retry: { maxAttempts: 4 } });   // at once: no top-level await, so the
self.onmessage = async ({ data }) => {                         // handler is set before any message arrives
  try {
    self.postMessage({ ok: true, body: await api.request(data.url) });
  } catch (e) {
    self.postMessage({ ok: false, error: `${e.name}: ${e.message}` });
  }
};
