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
import { OptionsError, earlyWasm, fetchWasm, loadWasm, makeCreateClient } from './core.js';

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

/**
 * What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs):
 * the engine's wasm-bindgen glue, imported apart (a chunk of its own in a bundle) from the moment this
 * module is evaluated, as the wasm is fetched. Not on the critical path: a page's first requests go
 * through the boot build (boot.js) while the engine and its glue load.
 */
let importing;
const theGlue = () =>
  (importing ??= import('./stormguard.js').then(({ Client, UserFnFlag, finish, imports }) => {
    const glue = { Client, UserFnFlag, finish, imports };
    return glue;
  }));
Promise.resolve().then(theGlue).catch(() => {}); // a failure is the load's (below) to report

export const { createClient, createClientSync } = makeCreateClient(async (source, signal) => {
  if (source !== undefined) early.cancel();
  const loaded = await theGlue().catch((e) => {
    importing = undefined; // tried again by the next load
    throw new OptionsError(`stormguard: its engine's glue (stormguard.js) could not be loaded: ${e?.message ?? e}`, {
      option: 'wasm',
      cause: e,
    });
  });
  await loadWasm(loaded, source, async (value) => {
    if (value === undefined) {
      const started = early.take(signal);
      if (started) return started;
    }
    const url = value === undefined ? besideOrFix() : new URL(value, base());
    return { input: await fetchWasm(url, { signal }), where: url.href };
  });
  return loaded;
});
