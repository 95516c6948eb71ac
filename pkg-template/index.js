// Browser, worker and bundler entry. The wasm is fetched from beside this
// file (`new URL('./stormguard_bg.wasm', import.meta.url)`, which Vite,
// webpack 5, Rspack and Next.js resolve at build time) or from what the first
// createClient's `wasm` option names (esbuild and other bundlers that do not
// rewrite that URL, CDNs, CSP-strict pages), and instantiated once per realm.
// The file beside it is fetched and compiled as soon as this module has been
// evaluated, so it is ready or nearly so when the app calls createClient
// (core.js, earlyWasm); a page can start it sooner still with a preload tag
// (README, "Preloading the wasm").
import './preflight.js';
import { Client, UserFnFlag, finish, imports } from './stormguard.js';
import { OptionsError, earlyWasm, fetchWasm, loadWasm, makeCreateClient } from './core.js';
// The boot build (a call's first attempt before the engine is in), for this entry only: a page is
// where the first load is slow; Node and Workers load no more than they use.
import { MAX_IN_FLIGHT as max, first, plan } from './boot.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

/** A string resolves against the document's base URL (a worker's own URL in a worker). */
const base = () => globalThis.document?.baseURI ?? globalThis.location?.href;

/** The file beside this one (one literal, for the bundlers that rewrite it). */
const beside = () => new URL('./stormguard_bg.wasm', import.meta.url);
const early = earlyWasm(beside);

/**
 * `beside()`, or where there is no such place (`import.meta.url` undefined: Cloudflare Workers, a
 * bundle that drops it) the OptionsError that says so and how to pass the module instead.
 */
function besideOrFix() {
  try {
    return beside();
  } catch (e) {
    throw new OptionsError(
      'stormguard: no location for its wasm module can be worked out here (import.meta.url gives no ' +
        'URL) and no wasm option was given. Import the module and pass it: ' +
        "import wasm from 'stormguard/stormguard_bg.wasm'; createClient({ wasm }) (Cloudflare Workers, " +
        "bundlers that import .wasm), or give its URL: createClient({ wasm: '/stormguard_bg.wasm' }) " +
        '(README, "Frameworks and tools")',
      { option: 'wasm', cause: e },
    );
  }
}

/** What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs). */
const glue = { Client, UserFnFlag, finish, imports };

export const { createClient, createClientSync } = makeCreateClient(async (source, signal) => {
  if (source !== undefined) early.cancel();
  await loadWasm(glue, source, async (value) => {
    if (value === undefined) {
      const started = early.take(signal);
      if (started) return started;
    }
    const url = value === undefined ? besideOrFix() : new URL(value, base());
    return { input: await fetchWasm(url, { signal }), where: url.href };
  });
  return glue;
}, { max, first, plan });
