// The JS face of stormguard, shared by the browser and Node entries: the
// error classes and a thin Client over the wasm one. Policy, state and the
// network all live in wasm; this file only turns the engine's error
// descriptors into class instances and guards the client after close().
// It also holds anySignal and schemaKey, which the React and Vue hooks share.

const BRAND = Symbol.for('stormguard.error');

/**
 * `{ signal, done }`: a signal that aborts when any of `signals` does
 * (AbortSignal.any where it exists), and `done()` to call when the work it
 * guards has settled. Without AbortSignal.any the fallback listens on each
 * source; `done()` removes those listeners, so a long-lived caller signal
 * does not collect one per call.
 */
export function anySignal(signals) {
  const list = signals.filter(Boolean);
  const done = () => {};
  if (list.length === 1) return { signal: list[0], done };
  if (typeof AbortSignal.any === 'function') return { signal: AbortSignal.any(list), done };
  const c = new AbortController();
  const links = [];
  for (const s of list) {
    if (s.aborted) {
      c.abort(s.reason);
      break;
    }
    const onAbort = () => c.abort(s.reason);
    s.addEventListener('abort', onAbort, { once: true });
    links.push([s, onAbort]);
  }
  return {
    signal: c.signal,
    done: () => {
      for (const [s, onAbort] of links) s.removeEventListener('abort', onAbort);
      links.length = 0;
    },
  };
}

/** The hooks' key of a call: what restarts it. Never throws (a BigInt or a
 * cyclic `version` would make JSON.stringify throw during render); such a
 * value is the engine's to reject, into `error`. */
export function schemaKey(href, cacheKey, version) {
  try {
    return JSON.stringify([href, cacheKey ?? null, version ?? null]);
  } catch {
    return JSON.stringify([href, String(cacheKey), String(typeof version)]);
  }
}

export class StormguardError extends Error {
  constructor(message, fields) {
    super(message, fields && 'cause' in fields ? { cause: fields.cause } : undefined);
    Object.defineProperty(this, BRAND, { value: true });
    this.requestId = '';
    this.attempts = 0;
    this.elapsedMs = 0;
    // One builtin copy: a for-of over Object.entries here crashed Node 20's
    // V8 (a deoptimizer fatal error) under 100k mixed calls.
    if (fields) Object.assign(this, fields);
    this.name = new.target.errorName;
    this.code = new.target.code;
  }
}
StormguardError.errorName = 'StormguardError';
StormguardError.code = 'STORMGUARD';

const define = (errorName, code) => {
  const C = class extends StormguardError {};
  C.errorName = errorName;
  C.code = code;
  Object.defineProperty(C, 'name', { value: errorName });
  return C;
};
export const TimeoutError = define('TimeoutError', 'TIMEOUT');
export const AbortError = define('AbortError', 'ABORTED');
export const NetworkError = define('NetworkError', 'NETWORK');
export const HttpError = define('HttpError', 'HTTP');
export const CircuitOpenError = define('CircuitOpenError', 'CIRCUIT_OPEN');
export const QueueFullError = define('QueueFullError', 'QUEUE_FULL');
export const ParseError = define('ParseError', 'PARSE');
export const OptionsError = define('OptionsError', 'INVALID_OPTIONS');

const CLASSES = {
  TimeoutError, AbortError, NetworkError, HttpError, CircuitOpenError,
  QueueFullError, ParseError, OptionsError,
};

/** True for any stormguard error, from this realm or another. */
export function isStormguardError(e) {
  return e instanceof StormguardError || (typeof e === 'object' && e !== null && e[BRAND] === true);
}

/** An engine descriptor `{ name, message, ...fields }` as its class. */
function toError(d) {
  if (d instanceof StormguardError) return d;
  const C = d && typeof d === 'object' && Object.hasOwn(CLASSES, d.name) ? CLASSES[d.name] : null;
  return C ? new C(d.message, d) : d;
}
const rethrow = (d) => { throw toError(d); };
const closedError = () => new AbortError('call aborted', { reason: 'client closed' });

class Client {
  #c;
  #final = null; // stats at close(), once the wasm client is freed
  // Calls into the wasm client in progress: close() from inside one (an
  // option getter, a listener) frees the wasm object only once they have
  // returned, as freeing it while borrowed would throw wasm-bindgen's own error.
  #depth = 0;

  constructor(inner) {
    this.#c = inner;
  }

  request(url, options) {
    return this.#call('request', url, options);
  }

  fetch(input, init) {
    return this.#call('fetch', input, init);
  }

  /** request() plus a last-good copy; `result.error` as its class. */
  schema(url, options) {
    // schema()'s engine promise is not classed in wasm: its result carries an error too.
    return this.#call('schema', url, options).then((r) => {
      if (r.error !== undefined) r.error = toError(r.error);
      return r;
    }, rethrow);
  }

  #call(method, a, b) {
    if (this.#final) return Promise.reject(closedError());
    this.#depth++;
    try {
      // request() and fetch() reject with classes already (setErrorFactory);
      // schema() classes its own results and rejections.
      return this.#c[method](a, b);
    } catch (d) {
      // The engine reports through the promise; this only turns a host
      // exception it could not catch into a rejection, never a throw.
      return Promise.reject(toError(d));
    } finally {
      if (--this.#depth === 0 && this.#final) this.#c.free();
    }
  }

  stats() {
    return this.#final ?? this.#c.stats();
  }

  breakers() {
    return this.#final ? [] : this.#c.breakers();
  }

  on(event, listener) {
    if (this.#final) return () => {};
    let id;
    try {
      id = this.#c.on(event, listener);
    } catch (d) {
      throw toError(d);
    }
    return () => {
      if (!this.#final) this.#c.off(id);
    };
  }

  close() {
    if (this.#final) return;
    this.#c.close();
    this.#final = { ...this.#c.stats(), inFlight: 0, queued: 0 };
    if (this.#depth === 0) this.#c.free();
  }
}

/** Builds createClient over a loader that instantiates the wasm once. */
export function makeCreateClient(load) {
  let ready = null;
  return async function createClient(options) {
    ready ??= load();
    const wasm = await ready;
    let inner;
    try {
      inner = new wasm.Client(options);
    } catch (d) {
      throw toError(d);
    }
    inner.setErrorFactory(toError);
    return new Client(inner);
  };
}
