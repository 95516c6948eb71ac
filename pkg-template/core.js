// The JS side of stormguard, shared by its entries (index.js, node.js,
// workerd.js; react.js and vue.js take its schema helpers). Policy, state and
// the network live in the wasm; here is what belongs to JS, in this order:
//
// - the helpers the React and Vue hooks share (anySignal, schemaKey,
//   clientFailed, schemaOf);
// - the error classes, with a brand that works across realms, and the
//   engine's error descriptors (src/web/errors.rs) made instances of them;
// - UserFns: a client's hooks, auth (and its refresh, shared by the client
//   and those derived from it), header functions and retry.retryOn, and the
//   validate and fetch options the engine hands it: every user function,
//   which the engine calls at fixed points of a call (src/web/hooks.rs: its
//   methods, the flags it answers with, the context object its hooks get);
// - Client, the thin wrapper over the wasm one: calls, fetch(), extend(),
//   events, beforeError hooks, close() (and a closed client's fetch passing
//   attempts on), and createClientSync's calls before the wasm is in;
// - loading the wasm (checkHost, fetchWasm, loadWasm, earlyWasm) and
//   makeCreateClient, from which each entry makes createClient (the browser entry hands it the boot
//   build, boot.js; Node's and workerd's never load it, as it would only cost their import).

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

/**
 * What the hooks show when the client itself failed to load (its promise
 * rejected): the call's `fallback` (source 'fallback'), else nothing (source
 * 'none'), with the load error, as schema() would have answered without a
 * network or a cache.
 */
export function clientFailed(options, error) {
  const fallback = tried(options, 'fallback');
  const source = fallback === undefined ? 'none' : 'fallback';
  return { data: fallback, source, stale: true, ageMs: undefined, error };
}

/** The errors a client's engine failed to be made with (its load, its options): see schemaOf. */
const unbuilt = new WeakSet();

/**
 * `client.schema(url, options)` for the hooks, `client` a Client or a
 * promise of one: when the client cannot be made (its promise rejects, or a
 * createClientSync's load or options failed), what clientFailed gives.
 */
export function schemaOf(client, url, options) {
  return Promise.resolve(client).then(
    (c) => c.schema(url, options).catch((e) => {
      if (unbuilt.has(e)) return clientFailed(options, e);
      throw e;
    }),
    (e) => clientFailed(options, e),
  );
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

/** A JSON media type: application/json, or any `+json` (application/problem+json). */
const JSON_TYPE = /^\s*(application\/json|[^;]*\/[^;]*\+json)\s*(;|$)/i;

/**
 * An engine descriptor `{ name, message, ...fields }` as its class. An
 * HttpError's carries its response's `contentType`, dropped here: when that
 * names JSON, the body read is parsed into `data` if it parses (the host's
 * JSON.parse, here rather than in the wasm, where it measured larger).
 */
function classed(d) {
  if (d instanceof StormguardError) return d;
  const C = d && typeof d === 'object' && Object.hasOwn(CLASSES, d.name) ? CLASSES[d.name] : null;
  if (!C) return d;
  const e = new C(d.message, d);
  if ('contentType' in e) {
    if (JSON_TYPE.test(e.contentType)) {
      try {
        e.data = JSON.parse(e.body);
      } catch {
        // Not JSON after all, or cut at 1024 characters: no data.
      }
    }
    delete e.contentType;
  }
  return e;
}

/** What the host's fetch says when it fails without a word of its own. */
function failedToFetch() {
  const ua = globalThis.navigator?.userAgent ?? '';
  if (/Firefox\//.test(ua)) return 'NetworkError when attempting to fetch resource.';
  if (/Safari\//.test(ua) && !/Chrom/.test(ua)) return 'Load failed';
  return /Mozilla/.test(ua) ? 'Failed to fetch' : 'fetch failed';
}

/**
 * A stormguard error as the host's fetch() would reject for its cause
 * (README, "What fetch() and schema() reject with"): a network failure, an open circuit or a full queue a
 * TypeError with the host's message; a timeout or deadline a DOMException
 * TimeoutError; close() a DOMException AbortError. `cause` is the
 * StormguardError, with its code, attempts, retryInMs... An OptionsError
 * (stormguard's own options) stays as it is.
 */
function native(e) {
  let n;
  if (e.code === 'NETWORK' || e.code === 'CIRCUIT_OPEN' || e.code === 'QUEUE_FULL') {
    const said = e.cause instanceof TypeError ? e.cause.message : '';
    return new TypeError(said || failedToFetch(), { cause: e });
  }
  if (e.code === 'TIMEOUT') n = new DOMException(e.message, 'TimeoutError');
  else if (e.code === 'ABORTED') n = new DOMException(e.message, 'AbortError');
  else return e;
  Object.defineProperty(n, 'cause', { value: e, writable: true, configurable: true });
  return n;
}

/** `d` as its class, or (`asFetch`) as what fetch() rejects with. */
function toError(d, asFetch) {
  const e = classed(d);
  return asFetch && e instanceof StormguardError ? native(e) : e;
}
const rethrow = (d) => { throw toError(d); };
const closedError = () => new AbortError('call aborted', { reason: 'client closed' });

// ---- A client's hooks, auth and header functions ------------------------
// (README, "Hooks"). Read and checked here, and called by the engine
// at fixed points of each attempt (src/web/hooks.rs): what they may change
// is the engine's policy core's to decide (a beforeRetry false, a 401's
// replay). Functions are called in JS, where they and what they return
// live; the engine waits for each within the attempt's time, the deadline
// and until the call is aborted.

const HOOKS = ['beforeRequest', 'afterResponse', 'beforeRetry', 'beforeError'];
const invalid = (option, reason) => new OptionsError(`invalid option ${option}: ${reason}`, { option });
/** What a call ends with when one of its functions fails: OptionsError naming the option, `cause` what it threw. */
const failed = (option, reason, cause) => new OptionsError(`${option}: ${reason}`, { option, cause });

/** `obj?.[key]`; undefined when reading throws (the engine reads it again and names it). */
function tried(obj, key) {
  try {
    return obj?.[key];
  } catch {
    return undefined;
  }
}

/** `obj[key]`; OptionsError naming it when reading throws. */
function field(obj, key, name = key) {
  try {
    return obj?.[key];
  } catch {
    throw invalid(name, 'could not be read');
  }
}

/** `await f(...args)`; what it throws or rejects with becomes `fail(thrown)`. */
async function call(f, args, fail) {
  try {
    return await f(...args);
  } catch (e) {
    throw fail(e);
  }
}

/**
 * `auth`, read and checked; `home` the origin of the client's baseUrl, else of the page. The
 * token goes to `home` and `auth.origins` only (README, "auth"): where there is
 * neither (Node without baseUrl), createClient rejects rather than send it everywhere.
 */
function readAuth(auth, home) {
  if (auth === undefined) return undefined;
  if (auth === null || typeof auth !== 'object') throw invalid('auth', 'must be an object');
  const token = field(auth, 'token', 'auth.token');
  const refresh = field(auth, 'refresh', 'auth.refresh');
  const scheme = field(auth, 'scheme', 'auth.scheme') ?? 'Bearer';
  const given = field(auth, 'origins', 'auth.origins');
  if (typeof token !== 'function') throw invalid('auth.token', 'is required (a function)');
  if (refresh !== undefined && typeof refresh !== 'function') throw invalid('auth.refresh', 'must be a function');
  if (typeof scheme !== 'string' || /\s/.test(scheme)) throw invalid('auth.scheme', 'must be a string without spaces');
  const origins = new Set(readOrigins(given));
  if (home) origins.add(home);
  if (origins.size === 0) {
    throw invalid('auth', "needs baseUrl or auth.origins where there is no page: the token goes only to their origins ('*': all)");
  }
  // done: refreshes finished well; running: by stale token, the refresh in progress, which every 401
  // to that token meanwhile waits for; finished: by token, `done` when its last refresh finished.
  return { token, refresh, scheme, origins, done: 0, running: new Map(), finished: new Map() };
}

const ORIGIN_RULE = "must be an array of origins (scheme://host[:port], nothing after) or '*'";

/**
 * `auth.origins` (undefined, or an array of origins or '*') as origins; OptionsError('auth.origins')
 * for anything else. A bad entry is named by its index, never repeated (it may hold userinfo).
 */
function readOrigins(given) {
  if (given === undefined) return [];
  if (!Array.isArray(given)) throw invalid('auth.origins', ORIGIN_RULE);
  return Array.from(given, (entry, i) => {
    if (entry === '*') return entry;
    let url;
    try {
      url = typeof entry === 'string' ? new URL(entry) : undefined;
    } catch {
      // refused below
    }
    const bare = url && url.origin !== 'null' && !url.username && !url.password && url.pathname === '/' &&
      !url.search && !url.hash && !/[?#*]/.test(entry); // (no wildcard host: it would match nothing)
    if (!bare) throw invalid(`auth.origins[${i}]`, ORIGIN_RULE);
    return url.origin;
  });
}

/** Whether the token of `auth` goes with a request to `url` (an absolute URL). */
function tokenGoes(auth, url) {
  if (auth.origins.has('*')) return true;
  try {
    return auth.origins.has(new URL(url).origin);
  } catch {
    return false;
  }
}

/** Tokens whose last finished refresh an auth state remembers (a server client's users). */
const FINISHED_KEPT = 256;
/** setTimeout's largest delay (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

// ---- Calls made from inside refresh() (README, "Auth tokens and refresh")
// They never wait for a refresh: the usual `refresh: () => api.request('/auth/refresh')`
// answered 401 would otherwise wait for the refresh that waits for it. A call is inside a
// refresh when the client is called while refresh() itself runs (synchronously: the usual
// recipe, and an async refresh up to its first await), and in Node (AsyncLocalStorage) from
// anything refresh() started, after awaits too. In a browser a call made after an await in
// refresh() cannot be told from any other call: it waits for the refresh, which ends at the
// deadline of the call that started it (README, "Auth tokens and refresh").

/** Node: the async context of a refresh() and what it starts; undefined where there is none. */
const refreshScope = (() => {
  try {
    const Storage = globalThis.process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
    return Storage ? new Storage() : undefined;
  } catch {
    return undefined;
  }
})();
/** refresh() calls running synchronously now. */
let refreshing = 0;
/**
 * Refreshes not yet forgotten. When none is, refreshScope is disabled: while an AsyncLocalStorage
 * is enabled, Node 20 tracks every promise of the process (2M awaits measured 153-213 ms before
 * one run(), 476-885 after, 160 once disabled again).
 */
let scoped = 0;

/** `f()` as a refresh: calls of the client inside it never wait for a refresh. */
function asRefresh(f) {
  refreshing++;
  try {
    return Promise.resolve(refreshScope ? refreshScope.run(true, f) : f());
  } catch (e) {
    return Promise.reject(e);
  } finally {
    refreshing--;
  }
}

/** A call made now is made from inside a refresh(). */
const insideRefresh = () => refreshing > 0 || refreshScope?.getStore() === true;

/**
 * Starts `auth`'s refresh of the stale `token`, shared by every 401 to that token while it
 * runs, and bounded by `ms` (the deadline of the call that starts it): once it settles or
 * `ms` passes it is forgotten, so a later 401 refreshes again. At `ms` its waiters get a
 * TimeoutError (the call that started it, its own deadline).
 */
function startRefresh(auth, token, ms) {
  let timer;
  let live = true;
  scoped++;
  const forget = () => {
    clearTimeout(timer);
    if (auth.running.get(token) === p) auth.running.delete(token);
    if (live && --scoped === 0) refreshScope?.disable();
    live = false;
  };
  const p = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      forget();
      reject(new TimeoutError('auth.refresh() did not settle within the deadline of the call that started it', {
        phase: 'deadline',
      }));
    }, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    timer?.unref?.(); // Node: a stalled refresh keeps no process alive
    asRefresh(auth.refresh).then(() => {
      forget();
      // A refresh that finished late (forgotten) still renewed the token.
      auth.done++;
      auth.finished.delete(token);
      auth.finished.set(token, auth.done);
      if (auth.finished.size > FINISHED_KEPT) auth.finished.delete(auth.finished.keys().next().value);
      resolve();
    }, (e) => {
      forget();
      reject(e);
    });
  });
  auth.running.set(token, p);
  return p;
}

/**
 * A client's functions: its own after its parent's (`extend`), its `auth`
 * or its parent's (sharing the parent's refreshes). `flags` tell the engine
 * what to ask, in the bits the wasm exports (`UserFnFlag`, src/web/hooks.rs). The
 * methods that run hooks get the attempt's context from the engine as one
 * object, `{ requestId, attempt, method, url }` (made for that call), and
 * give it to the hooks as it is or with their own members added.
 */
class UserFns {
  constructor(options, parent, home) {
    const headers = field(options, 'headers');
    const hooks = field(options, 'hooks');
    if (hooks !== undefined && (hooks === null || typeof hooks !== 'object')) throw invalid('hooks', 'must be an object');
    // Each header function (and the token) with the names that clients derived after its own give
    // statically: those win over it, as a derived client's options win over its parent's.
    const given = typeof headers === 'function' ? [] : headerNames(headers);
    const over = ([f, names]) => [f, [...names, ...given]];
    this.headers = [...(parent?.headers ?? []).map(over), ...(typeof headers === 'function' ? [[headers, []]] : [])];
    this.hooks = {};
    for (const name of HOOKS) {
      const v = hooks === undefined ? undefined : field(hooks, name, `hooks.${name}`);
      const list = v === undefined ? [] : Array.isArray(v) ? [...v] : [v];
      if (!list.every((f) => typeof f === 'function')) {
        throw invalid(`hooks.${name}`, 'must be a function or an array of functions');
      }
      this.hooks[name] = [...(parent?.hooks[name] ?? []), ...list];
    }
    const auth = readAuth(field(options, 'auth'), home);
    // This client's own token, or its parent's under the names given statically since.
    [this.auth, this.authOver] = auth ? [auth, []] : [parent?.auth, [...(parent?.authOver ?? []), ...given]];
    this.deadlineMs = field(options, 'deadlineMs') ?? parent?.deadlineMs ?? 20000;
    // The engine has checked it (OptionsError('retry.retryOn')): a function or nothing.
    this.predicate = field(field(options, 'retry'), 'retryOn', 'retry.retryOn') ?? parent?.predicate;
    const h = this.hooks;
    // Header functions or a token to read before each attempt's admission.
    this.reads = this.headers.length > 0 || this.auth !== undefined;
    const adds = this.reads || h.beforeRequest.length > 0;
    this.flags = (adds || h.afterResponse.length ? UserFnFlag.PerAttempt : 0) | (h.beforeRetry.length ? UserFnFlag.BeforeRetry : 0) |
      (this.auth?.refresh ? UserFnFlag.Refresh : 0) | (adds ? UserFnFlag.MayAuthorize : 0) | (this.predicate ? UserFnFlag.RetryOn : 0);
  }

  /**
   * What the header functions and the token give an attempt, read before
   * it is admitted: its holds are those of the credentials it will send
   * (README, "Server clients"), and a retry carries the current token. Never over a
   * header of the call's own (`own`: lower-case names joined by newlines),
   * and the token only to the auth's origins (`url`: the call's).
   * `{ pairs, seen, headers }`: the [name, value] pairs to set, the
   * refreshes finished when the token was read (undefined: no token sent),
   * and `base` (the call's headers, if any) with the pairs set: the
   * headers as they will be sent, whose credentials the engine digests.
   */
  async read(base, own, url) {
    const mine = own.split('\n');
    const headers = new Headers(base ?? undefined);
    const pairs = [];
    /**
     * Sets the pair unless the call's own headers or `over` name it: whether it did. A pair no
     * header can hold throws a TypeError naming the header only: the host's (Headers.set's)
     * repeats the value, a token perhaps (README, "Threat model").
     */
    const set = (name, value, over) => {
      const lower = String(name).toLowerCase();
      if (mine.includes(lower) || over.includes(lower)) return false;
      try {
        headers.set(name, value);
      } catch {
        throw refusedHeader(name);
      }
      pairs.push([name, value]);
      return true;
    };
    for (const [f, over] of this.headers) {
      const given = await call(f, [], (e) => failed('headers', 'the headers function threw or rejected', e));
      try {
        if (given === null || typeof given !== 'object') {
          if (given !== undefined && given !== null) throw new TypeError(`headers function gave ${typeof given}`);
        } else {
          const entries = typeof given[Symbol.iterator] === 'function' ? given : Object.entries(given);
          for (const [name, value] of entries) if (value !== undefined) set(name, value, over);
        }
      } catch (e) {
        // Only a cause of ours: the host's words may quote what the function gave.
        const cause = refused.has(e) ? e : undefined;
        throw failed('headers', 'the headers function must give headers (an object, Headers or pairs)', cause);
      }
    }
    let seen;
    const auth = this.auth;
    // The token goes to its origins only: a request to another goes without it, never refreshed.
    if (auth && tokenGoes(auth, url)) {
      const done = auth.done;
      const token = await call(auth.token, [], (e) => failed('auth', 'auth.token() threw or rejected', e));
      if (token !== undefined && token !== null && typeof token !== 'string') {
        throw failed('auth', 'auth.token() must give a string, null or undefined');
      }
      // Not over the call's own Authorization, nor a static one of a client derived after the auth's;
      // a token not sent is not the call's to refresh.
      if (typeof token === 'string') {
        let sent;
        try {
          sent = set('authorization', auth.scheme ? `${auth.scheme} ${token}` : token, this.authOver);
        } catch (e) {
          throw failed('auth', 'auth.token() gave a value no header can hold', e); // (e names the header only)
        }
        if (sent) seen = { token, done };
      }
    }
    return { pairs, seen, headers };
  }

  /**
   * What one attempt sends, settled before its admission (README,
   * "hooks"): a copy of `input` (a Request, or a URL with
   * `init`) with what `read` gives set on it (never over the call's own
   * headers, `own`; the token by the context's `url`), then the
   * beforeRequest hooks, each given `info`. `{ request, seen }`:
   * the Request as it will be sent, whose credentials and Idempotency-Key
   * admission judges, and `read`'s `seen` (undefined: no token of the
   * client's sent).
   */
  async prepare(input, init, own, info) {
    let request = input instanceof Request ? input.clone() : new Request(input, { ...init, signal: null });
    const pre = this.reads ? await this.read(request.headers, own, info.url) : undefined;
    for (const [name, value] of pre?.pairs ?? []) request.headers.set(name, value);
    for (const f of this.hooks.beforeRequest) {
      const next = await call(f, [request, info], (e) => failed('hooks', 'beforeRequest threw', e));
      if (next === undefined || next === null) continue;
      if (!(next instanceof Request)) throw failed('hooks', 'beforeRequest must return a Request or nothing');
      // Read through Request.prototype's getters, as fetch reads the Request: a subclass's own
      // `url` getter, or a Proxy of a Request (which the getters refuse), cannot lie about where
      // it goes (README, "auth").
      const [where, method] = real(next);
      if (where === undefined || new URL(where).origin !== new URL(real(request)[0]).origin || method !== request.method) {
        throw failed('hooks', "beforeRequest must keep the request's origin and method");
      }
      request = next;
    }
    return { request, seen: pre?.seen };
  }

  /**
   * The afterResponse hooks: each gets a clone of the response (as ky's do),
   * so one that reads the body leaves the call's own unread, and may return
   * a Response to use instead.
   */
  async after(request, response, info) {
    for (const f of this.hooks.afterResponse) {
      const next = await call(f, [request, response.clone(), info], (e) => failed('hooks', 'afterResponse threw', e));
      if (next === undefined || next === null) continue;
      if (!(next instanceof Response)) throw failed('hooks', 'afterResponse must return a Response or nothing');
      // A network error, as fetch rejects where it would give one (the engine's NetworkError).
      if (next.type === 'error') throw new TypeError('afterResponse gave Response.error()');
      response = next;
    }
    return response;
  }

  /** The beforeRetry hooks, for a retry the policy allows after `error` (a descriptor): false stops it. */
  async retry(error, delayMs, info) {
    info.error = toError(error);
    info.delayMs = delayMs;
    for (const f of this.hooks.beforeRetry) {
      if ((await call(f, [info], (e) => failed('hooks', 'beforeRetry threw', e))) === false) return false;
    }
    return true;
  }

  /** `retry.retryOn`, `f` the call's (else the client's), on a failure the policy could retry: true, false or undefined. */
  async retryOn(f, error, info) {
    info.error = toError(error);
    const v = await call(f ?? this.predicate, [info], (e) => failed('retry.retryOn', 'threw or rejected', e));
    return typeof v === 'boolean' ? v : undefined;
  }

  /**
   * After a 401 to an attempt whose token `read` described as `seen` (the
   * token, and the refreshes finished when it was read): at once if a
   * refresh of that token has finished since, else when the refresh of that
   * token in progress (or one started now, bounded by `ms`, the remaining
   * time of this call) has. Rejects with what the refresh threw.
   */
  refreshed(seen, ms) {
    const auth = this.auth;
    const { token, done } = seen;
    if ((auth.finished.get(token) ?? -1) > done) return Promise.resolve();
    return auth.running.get(token) ?? startRefresh(auth, token, ms);
  }

  /**
   * `validate`'s function `f` on a call's `value`, called on `on` (a Standard Schema's
   * `~standard`, else undefined): its answer as it is, which the engine reads (src/web/validate.rs).
   */
  validate(f, on, value) {
    return Reflect.apply(f, on, [value]);
  }

  /** The `fetch` option `f` on one attempt's `request`, a microtask from now (src/web/transport.rs). */
  send(f, request) {
    return passOn(f, request);
  }

  /** This client's functions, for calls whose 401 never waits for a refresh (made inside one). */
  withoutRefresh() {
    const fns = Object.create(this);
    fns.flags = this.flags & ~UserFnFlag.Refresh;
    return fns;
  }

  /**
   * The beforeError hooks on the error a call rejects with, each may return
   * another StormguardError. Hooks that answer at once are applied at once;
   * one that returns a promise is awaited until `until` (performance.now()
   * time; then the call's own error), or until one of `signals` aborts
   * (then what `stopped()` gives).
   */
  async error(e, until, signals, stopped) {
    const own = e;
    // A hook's failure ends the call as the call ended: its id, attempts and time.
    const fail = (reason, cause) => {
      const x = failed('hooks', reason, cause);
      if (isStormguardError(own)) ({ requestId: x.requestId, attempts: x.attempts, elapsedMs: x.elapsedMs } = own);
      return x;
    };
    const hooks = this.hooks.beforeError;
    const checked = (next) => (isStormguardError(next) ? next : fail('beforeError must return a StormguardError'));
    // The error after hooks i..; a promise of it from the first hook that answers later.
    const run = (i, e) => {
      for (; i < hooks.length; i++) {
        let next, later;
        try {
          next = hooks[i](e);
          later = typeof next?.then === 'function';
        } catch (x) {
          return fail('beforeError threw', x);
        }
        if (later) {
          const j = i + 1;
          return Promise.resolve(next).then((n) => {
            const c = checked(n);
            return c === n ? run(j, n) : c;
          }, (x) => fail('beforeError threw', x));
        }
        e = checked(next);
        if (e !== next) return e;
      }
      return e;
    };
    const work = run(0, e);
    if (!(work instanceof Promise)) return work;
    let timer;
    let onAbort;
    const ended = new Promise((resolve) => {
      timer = setTimeout(() => resolve(own), Math.max(0, until - performance.now()));
      onAbort = () => resolve(stopped());
      for (const s of signals) {
        if (s?.aborted) return onAbort();
        s?.addEventListener?.('abort', onAbort);
      }
    });
    try {
      return await Promise.race([work, ended]);
    } finally {
      clearTimeout(timer);
      for (const s of signals) s?.removeEventListener?.('abort', onAbort);
    }
  }
}

/** Request.prototype's `url` and `method` getters, read at the first hook (a host may add Request late). */
let getters;
/** `[url, method]` of a Request as fetch reads it (its internal slots), or `[]` for anything else. */
function real(request) {
  try {
    getters ??= ['url', 'method'].map((k) => Object.getOwnPropertyDescriptor(Request.prototype, k).get);
    return getters.map((get) => Reflect.apply(get, request, []));
  } catch {
    return [];
  }
}

/** The TypeErrors naming a header whose value the host refused (never the value). */
const refused = new WeakSet();
function refusedHeader(name) {
  const e = new TypeError(`the value given for the header ${typeof name === 'string' ? JSON.stringify(name) : typeof name} is not one a header can hold`);
  refused.add(e);
  return e;
}

/** The lower-case names a static `headers` option gives (an object, Headers, a Map or pairs). */
function headerNames(h) {
  try {
    if (h === null || typeof h !== 'object') return [];
    const entries = typeof h[Symbol.iterator] === 'function' ? h : Object.entries(h);
    return Array.from(entries, ([name]) => String(name).toLowerCase());
  } catch {
    return []; // the engine refuses such headers with an OptionsError of its own
  }
}

/**
 * The functions of a client made with `options` (derived from `parent`'s); `home` the origin of
 * its baseUrl, else of the page (none in Node without baseUrl).
 */
/**
 * The bits of a UserFns's `flags`, as the wasm exports them (src/web/hooks.rs, `UserFnFlag`): taken from
 * the glue its entry loaded (makeCreateClient), before any UserFns is made (each needs a wasm client).
 */
let UserFnFlag;

function makeUserFns(options, parent, home) {
  return new UserFns(options, parent, home); // (a call's retry.retryOn is called through it too)
}

/** The attempts every stormguard client of the realm sent through the global fetch (src/web/host.js). */
const SENT = Symbol.for('stormguard.sent');

/**
 * host.js's wasSent, for a closed client (its wasm is gone), in the same words (host.rs, `Sent`):
 * 'no' attempt, 'pass on', or it 'came back' to `who`.
 */
function passes(input, init, who) {
  const sent = globalThis[SENT];
  const v = !sent ? undefined : sent.has(input) ? input : sent.has(init) ? init : undefined;
  if (v === undefined) return 'no';
  let by = sent.get(v);
  if (by === undefined) sent.set(v, (by = new WeakSet()));
  if (by.has(who)) return 'came back';
  by.add(who);
  return 'pass on';
}

/** `f(input, init)` on the global object, a microtask later, as the engine sends an attempt. */
function passOn(f, input, init) {
  return Promise.resolve().then(() => Reflect.apply(f, globalThis, init === undefined ? [input] : [input, init]));
}

/** What a relative URL resolves against in a page (as in index.js). */
const pageBase = () => globalThis.document?.baseURI ?? globalThis.location?.href;

/** The global fetch now, as the engine reads it when a client is created. */
function currentFetch() {
  try {
    return globalThis.fetch;
  } catch {
    return undefined;
  }
}

/** The event names on() accepts (src/web/client.rs, EVENTS). */
const EVENTS = ['attempt', 'retry', 'timeout', 'giveUp', 'breaker', 'fallback', 'storage', 'wait'];

/** A client's stats before its engine is in. */
const idleStats = () => ({
  requests: 0, attempts: 0, retries: 0, timeouts: 0, failures: 0, breakerOpens: 0, budgetDenied: 0,
  queueRejected: 0, deduped: 0, fallbacks: 0, inFlight: 0, queued: 0, amplification: 0,
});

const isSignal = (s) => tag(s) === '[object AbortSignal]';

/**
 * `fn` when `signal` aborts; gives the function that stops listening. Calls
 * sharing one signal while they wait for the engine add one listener to it,
 * not one each (no MaxListenersExceededWarning in Node).
 */
const aborters = new WeakMap();
function onAbort(signal, fn) {
  let set = aborters.get(signal);
  if (!set) {
    set = new Set();
    aborters.set(signal, set);
    const all = () => {
      aborters.delete(signal);
      for (const f of set) f();
    };
    set.all = all;
    signal.addEventListener('abort', all, { once: true });
  }
  set.add(fn);
  return () => {
    set.delete(fn);
    if (set.size === 0 && aborters.get(signal) === set) {
      aborters.delete(signal);
      signal.removeEventListener('abort', set.all);
    }
  };
}

/**
 * `options` with its members `keys` read once, for the wrapper and the engine alike: an object
 * over it that holds what each read gave (the rest still read from `options`, inherited members
 * and getters as the engine reads them), and a `retry` among them with its `retryOn` read once
 * too (the engine checks it, the UserFns keeps it). A member whose read threw is left for the
 * engine to read and name; anything but an object is given back as it is (the engine rejects it
 * or reads none).
 */
function readOnce(options, keys) {
  if (options === null || typeof options !== 'object') return options;
  const d = {};
  for (const k of keys) {
    try {
      d[k] = { value: k === 'retry' ? readOnce(options[k], ['retryOn']) : options[k] };
    } catch {
      // the engine reads it again and names it
    }
  }
  return Object.create(options, d);
}

const isPlain = (o) => o !== null && typeof o === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(o));

/** `o`'s own members, each read once; `o` itself when a read throws (the engine reads it again and names it). */
function copied(o) {
  try {
    return { ...o };
  } catch {
    return o;
  }
}

// At most so many calls that ended before the engine was in are kept for it to count (#replay).
const ENDED_MAX = 1024;

/**
 * A call's options kept for the engine to count it (#replay, which sends nothing), without its body:
 * one stands in that the engine takes or refuses as it would the caller's. Plain options (or readOnce's
 * over them) only; any other is kept as it is.
 */
function bodiless(b) {
  try {
    const base = isPlain(b) ? b : Object.getPrototypeOf(b);
    if (!isPlain(base)) return b;
    const o = { ...base };
    if (base !== b) for (const k of Reflect.ownKeys(b)) o[k] = b[k]; // what readOnce read
    const body = o.body;
    if (typeof body === 'string') o.body = '';
    if (body === null || typeof body !== 'object') return o;
    if (tag(body) === '[object ReadableStream]') o.body = new ReadableStream();
    else if (!Array.isArray(body) && !isPlain(body)) o.body = ''; // any other BodyInit
    else {
      let json = null; // JSON that encodes (true), to undefined (false), or throws (null)
      try {
        json = JSON.stringify(body) !== undefined;
      } catch {}
      o.body = json ? {} : { toJSON: json === null ? () => { throw 0; } : () => {} };
    }
    return o;
  } catch {
    return b;
  }
}

/** A call's options with `name` (`deadlineMs`: the rest of its deadline; `signal`) `value` over them, nothing else changed. */
function withOption(options, name, value) {
  if (options === undefined || options === null) return { [name]: value };
  if (typeof options !== 'object') return options; // the engine rejects it
  return Object.create(options, { [name]: { value, enumerable: true, writable: true, configurable: true } });
}

class Client {
  #c;
  #fns; // the client's hooks, auth and header functions (UserFns), or null
  #final = null; // stats at close(), once the wasm client is freed
  #original; // the global fetch when the root client was created (see fetch())
  // Calls into the wasm client in progress: close() from inside one (an
  // option getter, a listener) frees the wasm object only once they have
  // returned, as freeing it while borrowed would throw wasm-bindgen's own error.
  #depth = 0;
  // A client derived from this one whose 401s never wait for a refresh: the calls made through
  // this client from inside a refresh() go through it. Made at the first such call.
  #bare = null;
  // The client this one derives from (extend), and what close() aborts: a wait for beforeError
  // hooks ends when this client or one it derives from is closed.
  #parent = null;
  #closing = null;
  // Before the engine is in (createClientSync, or extend() of such a client): `#build()` gives a
  // promise of `{ inner, fns }`, `#building` the build under way (or failed), `#deadline` the
  // default deadline of a call waiting for it, `#listeners` what on() registered meanwhile.
  #build = null;
  #building = null;
  #deadline = DEFAULT_DEADLINE_MS;
  #listeners = [];
  #ended = []; // the calls that ended before the engine was in, for it to count (#replay), at most ENDED_MAX
  // A root client made before the engine is in by an entry that has the boot build (boot.js, `#boot`):
  // its options, which decide whether the boot build may send a call's first attempt.
  #given = undefined;
  #boot = null;
  #booting = 0; // its boot attempts in flight
  #held = 0; // of those, the ones in flight when the engine came in: each holds one of its slots

  constructor(inner, fns = null, final = null, original = undefined) {
    this.#c = inner;
    this.#fns = fns;
    this.#final = final;
    this.#original = original;
    // Methods work unbound: `globalThis.fetch = client.fetch` installs it.
    // Named as the methods are (not 'bound fetch'): `client.fetch` looks like fetch.
    for (const m of ['request', 'fetch', 'schema', 'stats', 'breakers', 'on', 'close', 'extend']) {
      Object.defineProperty((this[m] = this[m].bind(this)), 'name', { value: m });
    }
  }

  /**
   * A client whose engine is not in yet: `build()` starts (or restarts) it,
   * giving a promise of `{ inner, fns }`; it is started now. Its calls wait
   * for it within their deadline (`deadline` when they give none) and signal.
   */
  static pending(build, deadline, original, parent = null, given = undefined, boot = null) {
    const c = new Client(null, null, null, original);
    c.#given = given;
    c.#boot = boot;
    c.#build = build;
    c.#deadline = deadline;
    c.#parent = parent;
    c.#whenBuilt().catch(() => {}); // the calls (and `ready`) report a failure
    return c;
  }

  /**
   * Settles when the engine is in (or this client is closed); rejects with
   * the build's error. A build that failed for the wasm (a download that
   * failed or stalled) or the host (a Worker that allows no timer at module
   * scope) is started again by the next caller; one that failed for the
   * options keeps failing with their OptionsError.
   */
  #whenBuilt() {
    if (this.#c || this.#final) return Promise.resolve();
    if (!this.#building) {
      let p;
      try {
        p = Promise.resolve(this.#build());
      } catch (e) {
        p = Promise.reject(e);
      }
      const building = p.then(
        ({ inner, fns }) => this.#adopt(inner, fns),
        (e) => {
          const again = !(e instanceof OptionsError) || e.option === 'wasm';
          if (this.#building === building && again) this.#building = null;
          if (e !== null && typeof e === 'object') unbuilt.add(e);
          throw e;
        },
      );
      this.#building = building;
    }
    return this.#building;
  }

  /**
   * The engine's client is in: the listeners registered meanwhile are attached to it, and it counts
   * the calls that ended meanwhile (#replay). Closed while it loaded, it counts them (the engine a
   * derived client shares), each as it ended: one whose deadline passed (`late`) as out of time, any
   * other as a call close() ended in its hands; and it is freed.
   */
  #adopt(inner, fns) {
    this.#build = null;
    this.#building = null;
    const ended = this.#ended;
    this.#ended = [];
    if (this.#final) {
      for (const [method, a, b, adopted] of ended) {
        if (adopted) inner.adopt(...adopted);
        inner[method](a, adopted?.[3] ? b : withOption(b, 'signal', AbortSignal.abort())).catch(() => {});
      }
      inner.free();
      return;
    }
    this.#c = inner;
    this.#fns = fns;
    if (this.#booting) inner.booting((this.#held = this.#booting));
    for (const l of this.#listeners) if (!l.off) l.id = inner.on(l.event, l.listener);
    this.#listeners = [];
    for (const call of ended) this.#replay(...call);
  }

  /**
   * `this[method](a, b)` once the engine is in, within the call's deadline
   * (the rest of it is what the engine gets) and its signal (`b.signal`, or a
   * Request input's): the caller's abort rejects with AbortError (fetch():
   * the signal's reason), the deadline with TimeoutError (phase
   * 'deadline'), close() with AbortError, a failed load with its
   * OptionsError('wasm'); schema() resolves with its fallback at the
   * deadline. Options are checked by the engine once it is in.
   */
  async #later(method, a, b) {
    const asFetch = method === 'fetch';
    const started = performance.now();
    // Read once, for this wait, the boot build and the engine alike: a request()'s plain options are
    // copied (the boot build sends only plain ones), any other options read through readOnce.
    b = method === 'request' && isPlain(b) ? copied(b) : readOnce(b, ['deadlineMs', 'signal']);
    let given, signal;
    try {
      ({ deadlineMs: given, signal } = b ?? {});
      if (asFetch && signal == null && tag(a) === '[object Request]') signal = a.signal;
    } catch {
      // the engine rejects such options
    }
    const valid = Number.isInteger(given) && given > 0 && given <= MAX_TIMER_MS;
    const ms = valid ? given : this.#deadline;
    const boot = this.#boot;
    const p = method === 'request' && boot && this.#given !== undefined && this.#booting < boot.max
      ? boot.plan(this.#given, a, b, pageBase())
      : undefined;
    const sent = p && boot.first(this.#original ?? currentFetch(), p, anySignal([isSignal(signal) ? signal : undefined, ...this.#closers()]).signal);
    if (sent) return this.#booted(sent, a, b, ms, signal);
    try {
      await this.#waitBuilt(ms, signal);
    } catch (e) {
      // None sent: its deadline passed, its caller or close() aborted it.
      if (e instanceof TimeoutError) this.#replay(method, a, b, [started, 6, undefined, true]);
      else if (e instanceof AbortError) this.#replay(method, a, b, [started, 6]);
      if (asFetch && e?.reason === signal?.reason && signal?.aborted && e instanceof AbortError) throw signal.reason;
      // schema() does not reject for its deadline: its fallback (the cache is the engine's to read).
      if (method === 'schema' && e instanceof TimeoutError) return clientFailed(b, e);
      throw toError(e, asFetch);
    }
    const left = Math.max(1, Math.ceil(ms - (performance.now() - started)));
    return this[method](a, valid || given === undefined ? withOption(b, 'deadlineMs', left) : b);
  }

  /**
   * A request() whose first attempt the boot build sent (`sent`, boot.js's first()): a 2xx it delivered
   * is the call's answer, and the engine gets its sample when it is in; any other end waits for the
   * engine (within the call's deadline, from when the attempt went, and its signal), which adopts the
   * attempt as the call's first and goes on with the call.
   */
  async #booted(sent, a, b, ms, signal) {
    this.#booting++;
    let r;
    try {
      r = await sent;
    } finally {
      this.#booting--;
      if (this.#held > 0) {
        this.#held--;
        if (!this.#final) this.#c.booting(0); // its slot back
      }
    }
    if (r.aborted) {
      const caller = isSignal(signal) && signal.aborted;
      if (caller) this.#replay('request', a, b, [r.started, 5]);
      throw caller ? new AbortError('call aborted', { reason: signal.reason }) : closedError();
    }
    if (r.kind === 0) {
      // Its sample: the call adopted, with nothing left to do (the caller has its answer).
      this.#replay('request', a, b === undefined ? b : { ...b, signal: undefined }, [r.started, 0]);
      return r.value;
    }
    try {
      await this.#waitBuilt(Math.max(1, Math.ceil(ms - (performance.now() - r.started))), signal);
    } catch (e) {
      if (r.kind === 1) r.value?.body?.cancel?.().catch(() => {});
      // Aborted while it waited: an answer whose body the engine never read is no sample (as its own
      // attempt aborted while reading it); any other end is.
      if (signal?.aborted && e instanceof AbortError) this.#replay('request', a, b, [r.started, r.kind === 1 ? 5 : r.kind, r.value]);
      // Its deadline passed while it waited: the attempt as it ended (an answer's status decides, as when
      // the deadline cuts the engine's own attempt reading its body), and nothing more.
      else if (e instanceof TimeoutError) this.#replay('request', a, b, [r.started, r.kind, r.value, true]);
      throw toError(e);
    }
    if (this.#final) return this.request(a, b);
    this.#c.adopt(r.started, r.kind, r.value);
    return this.request(a, b);
  }

  /**
   * Counts in the engine, at once if it is in, else when it arrives (#adopt), a call that ended before:
   * `this[method](a, b)` made through it with nothing left to send, its first attempt `adopted`
   * (`[started, kind, value, late]`, as Client.adopt takes it) if the boot build sent one, else kind 6
   * (none: the engine runs no hook for it). A 2xx the boot build delivered (kind 0) is that attempt's
   * sample; a call its caller aborted is made with its aborted signal, and the engine counts it as one
   * aborted in its hands: a request, its attempt if one went, a failure; one whose deadline passed
   * (`late`) as one out of time.
   */
  #replay(method, a, b, adopted) {
    if (!this.#c) {
      const keep = (!this.#final || this.#build) && this.#ended.length < ENDED_MAX;
      if (keep) this.#ended.push([method, a, bodiless(b), adopted]);
      return;
    }
    if (this.#final) return;
    if (adopted) this.#c.adopt(...adopted);
    this.#call(method, a, b).catch(() => {});
  }

  /** The engine, within `ms` and until `signal` or close() (of this client or one it derives from) aborts. */
  #waitBuilt(ms, signal) {
    const built = this.#whenBuilt();
    const signals = [isSignal(signal) ? signal : undefined, ...this.#closers()].filter(Boolean);
    return new Promise((resolve, reject) => {
      let timer;
      const stops = [];
      const end = (settle, v) => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        settle(v);
      };
      const stopped = () => {
        const caller = signal !== undefined && signals[0] === signal && signal.aborted;
        end(reject, caller ? new AbortError('call aborted', { reason: signal.reason }) : closedError());
      };
      if (signals.some((s) => s.aborted)) return stopped();
      for (const s of signals) stops.push(onAbort(s, stopped));
      timer = setTimeout(() => {
        end(
          reject,
          new TimeoutError('call deadline exceeded: the wasm module had not loaded', { phase: 'deadline', elapsedMs: ms }),
        );
      }, ms);
      built.then(() => end(resolve), (e) => end(reject, e));
    });
  }

  /**
   * A derived client (README, "extend()"): `options` over this client's, the
   * same breakers, budget, slots, holds and cache. Throws OptionsError. A
   * client derived from a closed one is closed. Before the engine is in, the
   * derived client is made when it is: its calls wait for it, and an
   * OptionsError rejects them.
   */
  extend(options) {
    if (this.#final) return new Client(null, null, this.#final, this.#original);
    options = readOnce(options, ['deadlineMs']); // by the wait below, the engine and the UserFns
    if (!this.#c) {
      const build = () =>
        this.#whenBuilt().then(() => {
          if (this.#final) throw closedError();
          return this.#derive(options);
        });
      return Client.pending(build, loadDeadline(options, this.#deadline), this.#original, this);
    }
    const { inner, fns } = this.#derive(options);
    const child = new Client(inner, fns, null, this.#original);
    child.#parent = this;
    return child;
  }

  /** The engine's client derived with `options`, and its functions. */
  #derive(options) {
    options = readOnce(options, ['headers', 'retry']); // by the engine and the UserFns
    this.#depth++;
    try {
      const inner = this.#c.extend(options, undefined);
      let fns;
      try {
        fns = options !== null && typeof options === 'object' ? makeUserFns(options, this.#fns, inner.home()) : this.#fns;
      } catch (e) {
        inner.free();
        throw e;
      }
      if (fns) inner.setUserFns(fns);
      return { inner, fns };
    } catch (d) {
      throw toError(d);
    } finally {
      if (--this.#depth === 0 && this.#final) this.#free();
    }
  }

  /**
   * This client once its engine is in (at once for a client made by
   * createClient); rejects with what its calls would: the OptionsError of a
   * failed load or of invalid options. A failed load is tried again.
   */
  get ready() {
    return this.#whenBuilt().then(() => this);
  }

  request(url, options) {
    if (!this.#c && !this.#final) return this.#later('request', url, options);
    return this.#beforeError('request', url, options);
  }

  fetch(input, init = undefined) { // length 1, as fetch's
    if (arguments.length === 0) return Promise.reject(new TypeError("Failed to execute 'fetch': 1 argument required, but only 0 present."));
    // Another client's attempt reaching a closed client installed before it (a module that hot
    // reload re-ran, its old client closed), or one still loading its engine, passes on as the live
    // engine's would (transport.rs): it is no call of this client's, and nothing holds it meanwhile.
    if (this.#final || !this.#c) {
      const was = passes(input, init, this);
      if (was === 'came back') return Promise.reject(new TypeError('stormguard: the global fetch leads back to this client'));
      if (was === 'pass on') return passOn(this.#original, input, init);
    }
    if (!this.#c && !this.#final) return this.#later('fetch', input, init);
    return this.#beforeError('fetch', input, init);
  }

  /**
   * The call `this[method](input, options)`, with the client's beforeError
   * hooks on what it rejects with, bounded as the call is: the wait for
   * them ends at the call's deadline (the call's own error), when its
   * signal aborts or this client (or one it derives from) is closed (the
   * call's abort). fetch() rejects as the
   * host's fetch does: the hooks see the StormguardError its rejection
   * carries as `cause`, and what they return is rejected with as fetch
   * would (a caller's abort reason, which carries none, is left as it is).
   * A call whose signal was aborted when it was made runs none.
   */
  #beforeError(method, input, options) {
    const fns = this.#fns;
    if (!fns?.hooks.beforeError.length) return this.#call(method, input, options);
    const asFetch = method === 'fetch';
    // Read once, for the wait here and the engine.
    options = readOnce(options, ['deadlineMs', 'signal']);
    let deadlineMs, signal;
    try {
      ({ deadlineMs, signal } = options ?? {});
    } catch {
      // the engine rejects it
    }
    const p = this.#call(method, input, options);
    if (signal === undefined && asFetch && input instanceof Request) signal = input.signal;
    // Its signal aborted already: it ends as the host's fetch ends such a call, its hooks not run (the engine ran none).
    const already = isSignal(signal) && signal.aborted;
    const until = performance.now() + (typeof deadlineMs === 'number' ? deadlineMs : fns.deadlineMs);
    return p.catch(async (e) => {
      const own = asFetch ? e?.cause : e;
      if ((asFetch && !isStormguardError(own)) || (already && own instanceof AbortError)) throw e;
      // What ends the wait: the caller's abort, else close(); the call ends as aborted, fetch()
      // with the caller's reason as the host's fetch does.
      let byCaller;
      const stopped = () => {
        const caller = signal?.aborted === true;
        const x = caller ? new AbortError('call aborted', { reason: signal.reason }) : closedError();
        if (caller) byCaller = x;
        if (isStormguardError(own)) ({ requestId: x.requestId, attempts: x.attempts, elapsedMs: x.elapsedMs } = own);
        return x;
      };
      const next = await fns.error(own, until, [signal, ...this.#closers()], stopped);
      if (!asFetch) throw next;
      if (next === byCaller) throw signal.reason;
      throw next === own ? e : native(next);
    });
  }

  /** The signals close() of this client and of those it derives from abort. */
  #closers() {
    const list = [];
    for (let c = this; c; c = c.#parent) list.push(c.#final ? AbortSignal.abort() : (c.#closing ??= new AbortController()).signal);
    return list;
  }

  /** request() plus a last-good copy; `result.error` as its class. */
  schema(url, options) {
    if (!this.#c && !this.#final) return this.#later('schema', url, options);
    // schema()'s engine promise is not classed in wasm: its result carries an error too.
    return this.#call('schema', url, options).then((r) => {
      if (r.error !== undefined) r.error = toError(r.error);
      return r;
    }, rethrow);
  }

  #call(method, a, b) {
    if (this.#final) return Promise.reject(toError(closedError(), method === 'fetch'));
    this.#depth++;
    try {
      // request() and fetch() reject with classes already (setErrorFactory);
      // schema() classes its own results and rejections.
      return this.#via()[method](a, b);
    } catch (d) {
      // The engine reports through the promise; this only turns a host
      // exception it could not catch into a rejection, never a throw.
      return Promise.reject(toError(d, method === 'fetch'));
    } finally {
      if (--this.#depth === 0 && this.#final) this.#free();
    }
  }

  /** Before the engine is in: every counter 0 (no call has reached it). */
  stats() {
    return this.#final ?? (this.#c ? this.#c.stats() : idleStats());
  }

  /** Before the engine is in: none. */
  breakers() {
    return this.#final || !this.#c ? [] : this.#c.breakers();
  }

  on(event, listener) {
    if (this.#final) return () => {};
    if (!this.#c) {
      // Checked as the engine checks them, and attached when it is in: no event is missed.
      if (typeof event !== 'string' || !EVENTS.includes(event)) throw invalid('event', 'is not a known event name');
      if (typeof listener !== 'function') throw invalid('listener', 'must be a function');
      const l = { event, listener, id: undefined, off: false };
      this.#listeners.push(l);
      return () => {
        l.off = true;
        if (l.id !== undefined && !this.#final) this.#c.off(l.id);
      };
    }
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
    if (!this.#c) {
      // Not in yet: the calls waiting for it end as aborted; the engine is freed when it arrives.
      this.#final = idleStats();
      this.#listeners = [];
      this.#closing?.abort();
      return;
    }
    this.#c.close();
    this.#final = { ...this.#c.stats(), inFlight: 0, queued: 0 };
    this.#closing?.abort();
    if (this.#depth === 0) this.#free();
  }

  #free() {
    this.#c.free();
    this.#bare?.free();
  }

  /** The wasm client a call made now goes through: the bare one inside a refresh() this client may start. */
  #via() {
    if (!(this.#fns && this.#fns.flags & UserFnFlag.Refresh) || !insideRefresh()) return this.#c;
    return (this.#bare ??= this.#c.extend({}, this.#fns.withoutRefresh()));
  }
}

// ---- Loading the wasm module -------------------------------------------

const WASM_FIX =
  'Pass the module yourself: createClient({ wasm: url | Response | bytes | WebAssembly.Module }) ' +
  '(README, "Frameworks and tools")';

/** What the engine calls through on the host; checked before the first load. */
const HOST_GLOBALS = ['fetch', 'Headers', 'Request', 'Response', 'AbortController', 'URL', 'WebAssembly'];

/**
 * Throws an Error naming every global the engine needs and the host lacks
 * (Jest's jsdom environment has no fetch, Request or Response),
 * and how to provide them, rather than a bare TypeError later. `early`
 * (before the module is loaded): a global defined by a getter is not read.
 * Node defines its fetch classes so and loads them (undici, tens of ms) at
 * the first read, which would hold createClientSync() and the module's load:
 * compile() reads them while the module compiles off the main thread, and
 * the build checks them once it is in.
 */
function checkHost(early) {
  const missing = HOST_GLOBALS.filter((n) => !(early && Object.getOwnPropertyDescriptor(globalThis, n)?.get) && typeof globalThis[n] === 'undefined');
  if (typeof globalThis.crypto?.getRandomValues !== 'function') missing.push('crypto.getRandomValues');
  if (missing.length === 0) return;
  const list = missing.join(', ');
  throw new Error(
    `stormguard: this environment lacks the global ${list}, which stormguard needs. ` +
      "Jest's jsdom environment does not provide them: set testEnvironment to 'jest-fixed-jsdom' " +
      "(npm i -D jest-fixed-jsdom), or to 'node' for tests without a DOM; elsewhere, install a fetch " +
      'polyfill (fetch, Headers, Request, Response) before calling createClient().',
  );
}

const tag = (v) => Object.prototype.toString.call(v);

/**
 * `options.wasm` as `{ kind, value }` (kind 'url' with a string, 'response',
 * 'bytes' or 'module'), or undefined when absent; OptionsError for anything
 * else. Kinds are told by their tags, so values from another realm (an
 * iframe, a test environment) count too.
 */
function readWasmOption(options) {
  if (options === null || typeof options !== 'object') return undefined; // the engine rejects non-objects
  let v;
  try {
    v = options.wasm;
  } catch {
    throw new OptionsError('wasm could not be read', { option: 'wasm' });
  }
  if (v === undefined) return undefined;
  if (typeof v === 'string') return { kind: 'url', value: v };
  const t = tag(v);
  if (t === '[object URL]') return { kind: 'url', value: String(v) };
  if (t === '[object ArrayBuffer]' || ArrayBuffer.isView(v)) return { kind: 'bytes', value: v };
  if (t === '[object WebAssembly.Module]') return { kind: 'module', value: v };
  if (t === '[object Response]') return { kind: 'response', value: v };
  throw new OptionsError(
    'wasm must be a URL (string or URL), a Response, an ArrayBuffer or typed array, or a WebAssembly.Module',
    { option: 'wasm' },
  );
}

const inParens = (text) => (text ? ` (${text})` : '');

/**
 * The bytes of a wasm module, checked: an OptionsError naming `where` (the
 * URL or file requested) when they are not WebAssembly, e.g. the index.html
 * a dev server sends back for a file it does not have.
 */
export function checkWasmBytes(bytes, where, contentType) {
  const b = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
  if (b.length >= 4 && b[0] === 0 && b[1] === 0x61 && b[2] === 0x73 && b[3] === 0x6d) return bytes;
  const head = new TextDecoder().decode(b.subarray(0, 24)).replace(/\s+/g, ' ').trim();
  const type = contentType ? `, content-type ${contentType}` : '';
  // Vite 7's dev server pre-bundles the package into .vite/deps/, where the wasm is not.
  const fix = /\/\.vite\/deps\//.test(where ?? '')
    ? "Vite's dependency pre-bundling moved the module away from its wasm: add " +
      "optimizeDeps: { exclude: ['stormguard'] } to vite.config.js (Vite 7 and older), or " +
      WASM_FIX.charAt(0).toLowerCase() + WASM_FIX.slice(1)
    : WASM_FIX;
  throw new OptionsError(
    `stormguard: ${where || 'the wasm option'} is not a WebAssembly module (${b.length} bytes${type}` +
      `${head ? `, starting ${JSON.stringify(head)}` : ''}): the server or bundler sent something else ` +
      `for stormguard_bg.wasm. ${fix}`,
    { option: 'wasm' },
  );
}

/**
 * A fetched wasm Response as what wasm-bindgen's init accepts: the Response
 * itself when it is served as application/wasm (streaming compilation), its
 * checked bytes otherwise. A failed status names the URL and the fix.
 */
async function wasmFromResponse(res, where = res.url) {
  if (!res.ok) {
    throw new OptionsError(
      `stormguard: loading the wasm module ${where || ''} failed with HTTP ${res.status}${inParens(res.statusText)}. ` +
        WASM_FIX,
      { option: 'wasm' },
    );
  }
  const type = res.headers.get('content-type') ?? '';
  // (The glue streams only a Response of this realm.)
  if (/^application\/wasm\b/i.test(type) && res instanceof Response && typeof WebAssembly.instantiateStreaming === 'function') {
    return res;
  }
  return checkWasmBytes(await res.arrayBuffer(), where, type);
}

/** fetch(url, init) for the module, with the URL and the fix in the error. */
export async function fetchWasm(url, init) {
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    // Unusable as given, as a 404 or a stall is (README, "wasm": every invalid `wasm` value rejects with
    // OptionsError('wasm')); the host's error is the cause.
    throw new OptionsError(`stormguard: could not fetch the wasm module ${url}: ${e?.message ?? e}. ${WASM_FIX}`, {
      option: 'wasm',
      cause: e,
    });
  }
  return wasmFromResponse(res, String(url));
}

/**
 * Instantiates the module from `source` (`{ kind, value }`) through the
 * wasm-bindgen glue (`{ imports, finish }`, see scripts/build.mjs);
 * `fromUrl(value)` turns a 'url' kind (or the default, undefined) into
 * `{ input, where }`, the host's way.
 */
export async function loadWasm(glue, source, fromUrl) {
  const { kind, value } = source ?? { kind: 'url' };
  let input = value;
  let where = '';
  try {
    if (kind === 'url') ({ input, where } = await fromUrl(value));
    else if (kind === 'response') {
      where = value.url;
      input = await wasmFromResponse(value);
    } else if (kind === 'bytes') input = checkWasmBytes(value);
  } catch (e) {
    // A Response that is not one (only its tag says so), a body stream that
    // errors, a detached buffer: the value is unusable, not the host broken.
    throw isStormguardError(e) ? e : unreadable(e, where);
  }
  await instantiate(glue, input, where);
}

/** A failure to read what `where` gave (not its content), as the OptionsError that names it. */
function unreadable(e, where) {
  return new OptionsError(
    `stormguard: ${where || 'the wasm option'} could not be read (${e?.name}: ${e?.message}). ${WASM_FIX}`,
    { option: 'wasm', cause: e },
  );
}

/** The failure to compile or instantiate what `where` gave, as the OptionsError that names it. */
function notThisModule(e, where) {
  return new OptionsError(
    `stormguard: ${where || 'the wasm option'} is not this version's stormguard WebAssembly module ` +
      `(${e?.name}: ${e?.message}). ${WASM_FIX}`,
    { option: 'wasm', cause: e },
  );
}

/**
 * `input` (a Response served as application/wasm, checked bytes, or a
 * Module) compiled; a Response compiles while its body streams in.
 * Rejects with the OptionsError naming `where`.
 */
async function compile(input, where) {
  try {
    if (tag(input) === '[object WebAssembly.Module]') return input;
    if (!ArrayBuffer.isView(input) && typeof Response === 'function' && input instanceof Response) {
      try {
        return await WebAssembly.compileStreaming(input);
      } catch (e) {
        // Its bytes were not a module, or its body could not be read (an
        // aborted download, a stream that errors).
        throw e?.name === 'CompileError' ? e : unreadable(e, where);
      }
    }
    const compiling = WebAssembly.compile(input);
    try {
      checkHost(); // the host's globals read while it compiles (see there)
    } catch {
      // what it lacks is told once the module is in
    }
    return await compiling;
  } catch (e) {
    throw isStormguardError(e) ? e : notThisModule(e, where);
  }
}

/**
 * Compiles `input` (nothing is fetched here) and instantiates it with the
 * glue's imports, turning a failure (a CompileError, a LinkError, another
 * module's missing exports) into an OptionsError that names where the module
 * came from.
 */
async function instantiate(glue, input, where) {
  const module = await compile(input, where);
  try {
    const instance = await WebAssembly.instantiate(module, glue.imports());
    // Two loads of different sources may run at once: the glue takes the
    // first instance only (the clients made on it keep pointing into it).
    if (finished.has(glue)) return;
    glue.finish(instance, module);
    finished.add(glue);
  } catch (e) {
    throw notThisModule(e, where);
  }
}

/** The glues that hold an instance (one per realm and entry). */
const finished = new WeakSet();

/**
 * The default module (`url()`, the file beside the browser entry) fetched and
 * compiled from the moment the entry is evaluated, so the download and the
 * compilation run while the app's own code does, not after its createClient.
 * It starts a microtask later: a createClient made while the app's modules
 * are evaluated (at module scope) loads the module itself, and one with a
 * `wasm` option then fetches only what that names. Only http(s) URLs are
 * fetched early (not a jsdom page's file: URL).
 *
 * `take(signal)` hands the load over once (a promise of `{ input, where }`,
 * input a compiled Module; `signal` aborts the download), or undefined when
 * none was started or it was taken;
 * `cancel()` stops it (the first createClient names another module), aborting
 * the download if it is under way.
 */
export function earlyWasm(url) {
  let state = 'scheduled';
  let pending;
  let controller;
  Promise.resolve().then(() => {
    if (state !== 'scheduled') return;
    state = 'off';
    // A host that lacks these hears about it from createClient (checkHost).
    if (typeof fetch !== 'function' || typeof AbortController !== 'function' || typeof WebAssembly !== 'object') return;
    let href;
    try {
      href = url();
    } catch {
      return;
    }
    if (!/^https?:$/.test(href.protocol)) return;
    state = 'started';
    const where = href.href;
    controller = new AbortController();
    pending = fetchWasm(href, { signal: controller.signal }).then(async (input) => ({ input: await compile(input, where), where }));
    pending.catch(() => {}); // reported by the createClient that takes it
  });
  return {
    take(signal) {
      const p = pending;
      if (p) signal?.addEventListener('abort', () => controller.abort(), { once: true });
      pending = undefined;
      state = 'taken';
      return p;
    },
    cancel() {
      if (pending) controller.abort();
      pending = undefined;
      state = 'cancelled';
    },
  };
}

const DEFAULT_DEADLINE_MS = 20000;

/**
 * How long createClient waits for the module: the client's `deadlineMs`
 * when it is a valid one, else its default (the engine reports an invalid
 * one once the module is in).
 */
function loadDeadline(options, otherwise = DEFAULT_DEADLINE_MS) {
  const ms = tried(options, 'deadlineMs');
  return Number.isInteger(ms) && ms > 0 && ms <= 2 ** 31 - 1 ? ms : otherwise;
}

/** What a load that has not finished in time is named by in its error. */
function sourceName(source) {
  if (source === undefined) return 'stormguard_bg.wasm (the file beside the package)';
  return source.kind === 'url' ? String(source.value) : `the wasm option's ${source.kind}`;
}

/**
 * Builds createClient over `load(source, signal)`, which instantiates the
 * wasm once from `source` (the createClient's `wasm` option as
 * `{ kind, value }`, or undefined for the file beside the package) and
 * stops fetching when `signal` aborts.
 *
 * Every createClient waits for the module at most its `deadlineMs`, then
 * rejects with OptionsError('wasm'). Calls naming the same source (the
 * default one included) share its load; a load no call waits for any more
 * is aborted and forgotten, as is one that failed: a later createClient
 * tries again, and one with another source loads that at once, whatever an
 * earlier load is still doing. The first load to finish is the realm's
 * module; a call waiting for another load takes it too.
 *
 * `boot`: the boot build, `{ max, first, plan }` of boot.js (max: MAX_IN_FLIGHT), which sends the first
 * attempt of a call made in a page before the module is in; the browser entry passes it, the others
 * do without.
 */
export function makeCreateClient(load, boot = null) {
  let wasm = null;
  let loaded;
  const whenLoaded = new Promise((resolve) => {
    loaded = resolve;
  });
  /** Loads under way, by source value (undefined: the default file). */
  const loads = new Map();

  function start(source) {
    const key = source?.value;
    const controller = new AbortController();
    const l = { controller, waiting: 0, settled: false, promise: load(source, controller.signal) };
    const end = () => {
      l.settled = true;
      if (loads.get(key) === l) loads.delete(key);
    };
    l.promise.then((glue) => {
      end();
      wasm ??= glue;
      UserFnFlag ??= glue.UserFnFlag;
      loaded(wasm);
    }, end);
    loads.set(key, l);
    return l;
  }

  /** The module, within `ms`; rejects with the load's error or OptionsError('wasm'). */
  async function wait(source, ms) {
    const l = loads.get(source?.value) ?? start(source);
    l.waiting++;
    let timer;
    try {
      return await new Promise((resolve, reject) => {
        timer = setTimeout(() => {
          reject(
            new OptionsError(
              `stormguard: loading the wasm module from ${sourceName(source)} did not finish within ${ms} ms ` +
                `(the client's deadlineMs). ${WASM_FIX}`,
              { option: 'wasm' },
            ),
          );
        }, ms);
        l.promise.then(resolve, reject);
        whenLoaded.then(resolve);
      });
    } finally {
      clearTimeout(timer);
      if (--l.waiting === 0 && !l.settled) {
        l.controller.abort();
        if (loads.get(source?.value) === l) loads.delete(source?.value);
      }
    }
  }

  /**
   * The engine's client for `options` and its functions, once the module is in; throws OptionsError.
   * `original`: the global fetch when the client was created (now it may be the client, installed).
   */
  function build(options, original) {
    options = readOnce(options, ['headers', 'retry']); // by the engine and the UserFns
    let inner;
    try {
      inner = new wasm.Client(options, original);
    } catch (d) {
      throw toError(d);
    }
    let fns;
    try {
      fns = makeUserFns(options, undefined, inner.home());
    } catch (e) {
      inner.free();
      throw e;
    }
    inner.setErrorFactory(toError);
    if (fns) inner.setUserFns(fns);
    return { inner, fns };
  }

  /**
   * A client at once (README, "A client at once"): never throws. Its calls wait
   * for the module within their own deadline and signal; a failed load, a
   * missing host global and invalid options reject them (and `ready`) with
   * their error, OptionsError for the options and the wasm.
   */
  function createClientSync(options) {
    const original = currentFetch();
    let given; // what the boot build judges its calls by (boot.js, plan)
    // Pages only: where the first load is slow (a server loads the engine from disk). A plain object's
    // own members (its plain headers' too) are read once, here, for the boot build and the engine alike
    // (as a request()'s plain options are); a read that throws leaves them to the engine to name.
    if (boot && typeof document !== 'undefined' && (options === undefined || isPlain(options))) {
      try {
        given = { ...options };
        if (isPlain(given.headers)) given.headers = { ...given.headers };
        options &&= given;
      } catch {
        given = undefined;
      }
    }
    let source;
    let bad;
    try {
      source = readWasmOption(options);
    } catch (e) {
      bad = e;
    }
    options = readOnce(options, ['deadlineMs']); // by the wait for the module, the engine and the UserFns
    const ms = loadDeadline(options);
    if (wasm && !bad) {
      // The module is in: the client is made now, as createClient makes it.
      let made;
      try {
        made = build(options, original);
      } catch (e) {
        return Client.pending(() => Promise.reject(e), ms, original);
      }
      return new Client(made.inner, made.fns, null, original);
    }
    return Client.pending(
      async () => {
        if (bad) throw bad;
        if (!wasm) {
          checkHost(true);
          wasm ??= await wait(source, ms);
        }
        checkHost();
        return build(options, original);
      },
      ms,
      original,
      null,
      bad ? undefined : given,
      boot,
    );
  }

  /** The promise API: the client once its engine is in; rejects with the OptionsError (or the host's Error). */
  const createClient = async (options) => createClientSync(options).ready;

  return { createClient, createClientSync };
}
