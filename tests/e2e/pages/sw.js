// A module Service Worker that uses the package as the README shows (README, "In a Service Worker"):
// the client kept as a promise (no top-level await in a Service Worker), calls under its scope's
// /api/ answered through client.fetch() from the fault server named in its URL.
import { createClient } from '/pkg/index.js';

const fault = new URL(self.location.href).searchParams.get('fault');
const api = createClient({ retry: { baseDelayMs: 5 }, concurrency: { max: 6, queue: 100 }, breaker: { consecutiveFailures: 3 } });

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (!url.pathname.includes('/api/')) return;
  event.respondWith((async () => {
    try {
      const client = await api;
      const res = await client.fetch(`${fault}/fail-first?n=1&id=${url.searchParams.get('id')}`);
      return Response.json({ ok: true, status: res.status, body: await res.json(), stats: client.stats() });
    } catch (e) {
      return Response.json({ ok: false, error: `${e.name}: ${e.message}` });
    }
  })());
});
