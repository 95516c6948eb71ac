// stormguard as the README's TanStack Query recipe writes it: createClientSync()
// at module scope, so nothing awaits before the first render.
import { createClientSync } from 'stormguard';

export const api = createClientSync();   // at once: no top-level await; a failed load is the query's error

// When the engine is in (the bench's breakdown reads it; it delays nothing).
api.ready.then(() => performance.mark('engine-ready'), () => {});

export function login(body: unknown, signal?: AbortSignal): Promise<unknown> {
  return api.request('/api/login', { method: 'POST', body, signal });
}

export function get(path: string, token: string, signal?: AbortSignal): Promise<unknown> {
  return api.request(path, { headers: { authorization: `Bearer ${token}` }, signal });
}
