// Cloudflare Workers entry (the `workerd` export condition, which wrangler's bundler picks). There,
// import.meta.url is undefined, so the .wasm is imported as a module (workerd hands it over
// compiled), and nothing may run at module scope: a timer, a random number or I/O outside a
// request throws "Disallowed operation called within global scope". A client made at module scope
// is core.js's client made before the module is in (Client.pending): the load it starts there fails
// for the host, so its first call (a request's) starts it again, and until then it holds nothing:
// stats() are zeros, breakers() none, listeners wait to be added. Invalid options reject that first
// call and every later one (README, "Bun, Deno, Cloudflare Workers and bundled servers").
import wasmModule from './stormguard_bg.wasm';
import { Client, UserFnFlag, finish, imports } from './stormguard.js';
import { fetchWasm, loadWasm, makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

/** What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs). */
const glue = { Client, UserFnFlag, finish, imports };

export const { createClientSync } = makeCreateClient(async (source, signal) => {
  await loadWasm(glue, source ?? { kind: 'module', value: wasmModule }, async (value) => {
    const url = new URL(value);
    return { input: await fetchWasm(url, { signal }), where: url.href };
  });
  return glue;
});

/** The same client in a promise resolved at once, not when the module is in: at module scope it cannot be. */
export const createClient = async (options) => createClientSync(options);
