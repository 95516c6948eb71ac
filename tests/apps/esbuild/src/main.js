// ?url=URL   what to GET through stormguard
// ?wasm=URL  another module URL to hand over (to see the error for a wrong one)
import { createClient } from 'stormguard';
import wasmUrl from 'stormguard/stormguard_bg.wasm';

const params = new URLSearchParams(location.search);
const out = document.querySelector('[data-testid="out"]');
try {
  const api = await createClient({ wasm: params.get('wasm') ?? wasmUrl, retry: { baseDelayMs: 5 } });
  const body = await api.request(params.get('url'));
  out.textContent = JSON.stringify({ body, stats: api.stats() });
  out.dataset.state = 'ok';
} catch (e) {
  out.textContent = `${e.name}: ${e.message}`;
  out.dataset.state = 'error';
}
