// The client strategies the benchmarks compare, as factories. Browser- and
// Node-compatible: no Node imports, and the libraries are injected, so a page
// (the demo in www/, the overhead benchmark) and the Node storm runner build
// exactly the same strategies:
//
//   import ky from 'ky';
//   import * as cockatiel from 'cockatiel';
//   import { createClient } from 'stormguard';
//   const s = makeStrategies({ ky, cockatiel, createClient });
//   const client = await s.cockatiel();          // one per logical client
//   const data = await client.call(url);         // parsed JSON, rejects on failure
//   client.close();
//
// Every strategy resolves with the parsed JSON body of a 2xx response and
// rejects otherwise. `fetch` defaults to the global one, looked up at call
// time (so a counting wrapper installed later is seen by every strategy,
// stormguard included, which calls the global fetch itself).

export const STORM_STRATEGIES = ['none', 'naive', 'ky', 'cockatiel', 'stormguard'];
export const OVERHEAD_STRATEGIES = ['raw', 'stormguard', 'ky', 'cockatiel'];

export const DESCRIPTIONS = {
  raw: 'fetch(url) then res.json(), nothing else',
  none: 'one attempt, 3 s timeout (AbortSignal.timeout)',
  naive: '300 ms timeout per attempt, 3 immediate retries on any failure',
  ky: 'ky.get(url).json() with its defaults: 3 attempts, 300/600 ms backoff without jitter, 10 s timeout',
  cockatiel:
    'wrap(retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }), ' +
    'circuitBreaker(handleAll, { halfOpenAfter: 10 s, breaker: new ConsecutiveBreaker(5) }), ' +
    'timeout(3 s, Aggressive)) around fetch, as cockatiel\'s README shows',
  'cockatiel (retry + timeout)':
    'wrap(retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }), timeout(3 s)) around fetch',
  stormguard: 'createClient() with the default options, client.request(url)',
};

export class StatusError extends Error {
  constructor(status) {
    super(`HTTP ${status}`);
    this.name = 'StatusError';
    this.status = status;
  }
}

/** The parsed body of a 2xx response; otherwise the body is released and the call rejects. */
async function okJson(res) {
  if (!res.ok) {
    res.body?.cancel().catch(() => {});
    throw new StatusError(res.status);
  }
  return res.json();
}

/** Up to `attempts` tries of fetch with a per-attempt timeout, no wait in between. */
async function tries(fetchFn, url, attempts, timeoutMs) {
  let last;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fetchFn(url, { signal: AbortSignal.timeout(timeoutMs) }).then(okJson);
    } catch (e) {
      last = e;
    }
  }
  throw last;
}

const noop = () => {};

/**
 * @param {{ ky?: any, cockatiel?: any, createClient?: Function, fetch?: Function }} libs
 * @returns factories `name(options?) -> Promise<{ call(url), close(), stats?() }>`
 */
export function makeStrategies({ ky, cockatiel, createClient, fetch: fetchOpt } = {}) {
  const fetchFn = fetchOpt ?? ((input, init) => globalThis.fetch(input, init));
  const need = (lib, name) => {
    if (!lib) throw new Error(`strategy ${name} needs the ${name} library injected`);
    return lib;
  };
  return {
    async raw() {
      return { call: (url) => fetchFn(url).then(okJson), close: noop };
    },

    async none({ timeoutMs = 3000 } = {}) {
      return { call: (url) => tries(fetchFn, url, 1, timeoutMs), close: noop };
    },

    async naive({ timeoutMs = 300, retries = 3 } = {}) {
      return { call: (url) => tries(fetchFn, url, 1 + retries, timeoutMs), close: noop };
    },

    async ky(options = {}) {
      const k = need(ky, 'ky');
      const client = Object.keys(options).length ? k.create(options) : k;
      return { call: (url) => client.get(url).json(), close: noop };
    },

    async cockatiel({ breaker = true, timeoutMs = 3000, maxAttempts = 3, halfOpenAfter = 10_000, consecutive = 5 } = {}) {
      const c = need(cockatiel, 'cockatiel');
      const policies = [c.retry(c.handleAll, { maxAttempts, backoff: new c.ExponentialBackoff() })];
      const cb = breaker ? c.circuitBreaker(c.handleAll, { halfOpenAfter, breaker: new c.ConsecutiveBreaker(consecutive) }) : null;
      if (cb) policies.push(cb);
      policies.push(c.timeout(timeoutMs, c.TimeoutStrategy.Aggressive));
      const policy = c.wrap(...policies);
      const STATES = ['closed', 'open', 'half-open', 'isolated'];
      return {
        call: (url) => policy.execute(({ signal }) => fetchFn(url, { signal }).then(okJson)),
        close: noop,
        // the policy's one breaker, named as stormguard names its states
        breakerState: () => (cb ? STATES[cb.state] : 'closed'),
        breaker: cb,
      };
    },

    // via 'schema': the call is client.schema(url), which answers with the last good copy (kept in
    // memory in Node) when the network call fails or the circuit is open; only source 'none' fails.
    // breakerKey 'origin': every call passes `breakerKey: <origin>`, one breaker for the whole backend
    // instead of the default one per path.
    async stormguard(options = {}, via = 'request', { breakerKey } = {}) {
      const client = await need(createClient, 'stormguard')(options);
      const callOptions = breakerKey === 'origin' ? (url) => ({ breakerKey: new URL(url).origin }) : () => undefined;
      const viaSchema = (url) => client.schema(url, callOptions(url)).then((r) => {
        if (r.source === 'none') throw r.error ?? new Error('no copy');
        return r.data;
      });
      return {
        call: via === 'schema' ? viaSchema : (url) => client.request(url, callOptions(url)),
        stats: () => client.stats(),
        close: () => client.close(),
        client,
      };
    },
  };
}
