// Cloudflare Workers entry (the `workerd` export condition, which wrangler's bundler picks). There,
// import.meta.url is undefined, so the .wasm is imported as a module (workerd hands it over
// compiled), and nothing may run at module scope: a timer, a random number or I/O outside a
// request throws "Disallowed operation called within global scope". So a client made at module
// scope is made for real at its first call (a request's), and until then holds nothing: stats()
// are zeros, breakers() none, listeners wait to be added. Invalid options reject that first call
// and every later one (README, "Bun, Deno, Cloudflare Workers and bundled servers").
import wasmModule from './stormguard_bg.wasm';
import { Client, UserFnFlag, finish, imports } from './stormguard.js';
import { fetchWasm, loadWasm, makeCreateClient } from './core.js';

export {
  StormguardError, TimeoutError, AbortError, NetworkError, HttpError,
  CircuitOpenError, QueueFullError, ParseError, OptionsError, isStormguardError,
} from './core.js';

/** What core.js instantiates the module with (the glue's initSync is left out: see scripts/build.mjs). */
const glue = { Client, UserFnFlag, finish, imports };

const { createClient: create } = makeCreateClient(async (source, signal) => {
  await loadWasm(glue, source ?? { kind: 'module', value: wasmModule }, async (value) => {
    const url = new URL(value);
    return { input: await fetchWasm(url, { signal }), where: url.href };
  });
  return glue;
});

const ZERO = {
  requests: 0, attempts: 0, retries: 0, timeouts: 0, failures: 0, breakerOpens: 0, budgetDenied: 0,
  queueRejected: 0, deduped: 0, fallbacks: 0, inFlight: 0, queued: 0, amplification: 0,
};

/** A client that `make()`s the real one at its first call, and is it from then on. */
function deferred(make) {
  let made;
  let real;
  let closed = false;
  const waiting = new Set();
  const client = () => (made ??= make().then((c) => {
    real = c;
    for (const l of waiting) l.off = c.on(l.event, l.listener);
    waiting.clear();
    if (closed) c.close();
    return c;
  }));
  return {
    request: (url, options) => (real ? real.request(url, options) : client().then((c) => c.request(url, options))),
    fetch(input, ...init) { // length 1, as fetch's; unbound, as installed: globalThis.fetch = client.fetch
      return real ? real.fetch(input, ...init) : client().then((c) => c.fetch(input, ...init));
    },
    schema: (url, options) => (real ? real.schema(url, options) : client().then((c) => c.schema(url, options))),
    stats: () => real?.stats() ?? { ...ZERO },
    breakers: () => real?.breakers() ?? [],
    on: (event, listener) => {
      if (real) return real.on(event, listener);
      const l = { event, listener, off: null };
      waiting.add(l);
      return () => (l.off ? l.off() : waiting.delete(l));
    },
    close: () => {
      closed = true;
      real?.close();
    },
    extend: (options) => deferred(() => client().then((c) => c.extend(options))),
    /** The real client, made now if no call has made it yet (at a request's time: see above). */
    get ready() {
      return client();
    },
  };
}

export const createClient = (options) => Promise.resolve(deferred(() => create(options)));
/** The same client without the promise (README, "A client at once"): made for real at its first call. */
export const createClientSync = (options) => deferred(() => create(options));
