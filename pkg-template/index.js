// Browser, worker and bundler entry. The wasm is fetched from beside this
// file (`new URL('./stormguard_bg.wasm', import.meta.url)`, which Vite,
// webpack 5, Rspack and Next.js resolve at build time) or from what the first
// createClient's `wasm` option names (esbuild and other bundlers that do not
// rewrite that URL, CDNs, CSP-strict pages), and instantiated once per realm.
import './preflight.js';
import init, * as wasm from './stormguard.js';
import { fetchWasm, loadWasm, makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

/** A string resolves against the document's base URL (a worker's own URL in a worker). */
const base = () => globalThis.document?.baseURI ?? globalThis.location?.href;

export const createClient = makeCreateClient(async (source) => {
  await loadWasm(init, source, async (value) => {
    const url = value === undefined ? new URL('./stormguard_bg.wasm', import.meta.url) : new URL(value, base());
    return { input: await fetchWasm(url), where: url.href };
  });
  return wasm;
});
