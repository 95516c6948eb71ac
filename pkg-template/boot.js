// The first attempt of a call made before the engine is in (issue 39; README, "A client at once"),
// sent by the boot build of the crate (src/boot.rs: Rust makes the attempt's AbortController, calls
// fetch, aborts at the attempt's time or the caller's signal). Its module is small and travels inlined
// in stormguard_boot.js, so the first request leaves as soon as the app's code runs, while the engine
// still downloads. A 2xx the call needs nothing else for is the call's answer at once; any other end
// is handed to the engine, which adopts the attempt as the call's first (src/web/driver/adopt.rs) and goes on
// as it would have (attempt 2 next, the same deadline). Either way the engine gets its sample.
//
// Only calls whose first request the boot build sends exactly as the engine would: request(), a client
// with no hooks, auth, header functions, validation, transport or policy options of its own (those
// change what is sent or need the engine to check them first), and call options among method,
// headers, body, signal, deadlineMs, timeoutMs and responseType 'json' or 'text'. Every other call
// waits for the engine, as before.
import { bytes, end as over, initSync, send } from './stormguard_boot.js';

let usable; // undefined: not tried yet

/** The boot module, compiled at the first call that needs it; false where the host refuses (Workers). */
function loaded() {
  if (usable === undefined) {
    try {
      initSync({ module: bytes() });
      usable = true;
    } catch {
      usable = false;
    }
  }
  return usable;
}

/** Boot attempts a client has in flight at most: the engine's default `concurrency.max` in a page. */
export const MAX_IN_FLIGHT = 6;

const CLIENT_KEYS = new Set(['deadlineMs', 'timeoutMs', 'baseUrl', 'headers', 'wasm', 'crossTab', 'dedupe', 'waitForOnline', 'rateLimit']);
const CALL_KEYS = new Set(['method', 'headers', 'body', 'signal', 'deadlineMs', 'timeoutMs', 'responseType']);
const FLAGS = ['crossTab', 'dedupe', 'waitForOnline', 'rateLimit'];
const MAX_MS = 2 ** 31 - 1;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const plain = (o) => o !== null && typeof o === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(o));
const ms = (v) => v === undefined || (Number.isInteger(v) && v > 0 && v <= MAX_MS);
const only = (o, keys) => o === undefined || (plain(o) && Object.keys(o).every((k) => keys.has(k) && o[k] !== undefined));
const strings = (h) => h === undefined || (plain(h) && Object.values(h).every((v) => typeof v === 'string'));

/**
 * What the boot build sends for `request(url, options)` of a client made with `given` (in a page, a
 * plain object's own members, copied once when the client was made: core.js, createClientSync):
 * `{ href, init, ms, json }`, or undefined when the call is not one it sends as the engine would (see
 * above). `base`: the page's URL, if any. Never throws.
 */
export function plan(given, url, options, base) {
  try {
    if (!only(given, CLIENT_KEYS) || !only(options, CALL_KEYS) || !loaded()) return undefined;
    const client = given ?? {};
    const call = options ?? {};
    if (!ms(client.deadlineMs) || !ms(client.timeoutMs) || !ms(call.deadlineMs) || !ms(call.timeoutMs)) return undefined;
    if (FLAGS.some((k) => client[k] !== undefined && typeof client[k] !== 'boolean')) return undefined;
    if (!strings(client.headers) || !strings(call.headers)) return undefined;
    if (call.signal !== undefined && Object.prototype.toString.call(call.signal) !== '[object AbortSignal]') return undefined;
    if (call.responseType !== undefined && call.responseType !== 'json' && call.responseType !== 'text') return undefined;
    if (globalThis.navigator?.onLine === false) return undefined; // the engine waits for the network
    const method = call.method === undefined ? 'GET' : typeof call.method === 'string' ? call.method.toUpperCase() : '';
    if (!METHODS.includes(method)) return undefined;
    const href = resolve(client.baseUrl, url, base);
    if (href === undefined) return undefined;
    const headers = new Headers(client.headers);
    for (const [k, v] of Object.entries(call.headers ?? {})) headers.set(k, v);
    if (headers.has('idempotency-key')) return undefined;
    const init = {};
    if (method !== 'GET') init.method = method;
    let { body } = call;
    if (body !== undefined && body !== null) {
      if (method === 'GET' || method === 'HEAD') return undefined;
      if (Array.isArray(body) || plain(body)) {
        body = JSON.stringify(body);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      } else if (typeof body !== 'string') return undefined;
      init.body = body;
    }
    if ([...headers.keys()].length) init.headers = headers;
    const deadline = call.deadlineMs ?? client.deadlineMs ?? 20000;
    const timeout = call.timeoutMs ?? client.timeoutMs ?? 6000;
    return { href, init, ms: Math.min(deadline, timeout), json: call.responseType !== 'text' };
  } catch {
    return undefined;
  }
}

/** Path characters written as they are sent: no `.` segments, escapes or query to join differently. */
const SIMPLE_PATH = /^\/?([A-Za-z0-9_~-][A-Za-z0-9._~-]*\/?)*$/;

/**
 * The URL `url` names, as the engine resolves it: an absolute http(s) URL as given; a relative one
 * appended to `baseUrl`'s path (README, "baseUrl"), only when both are plain (else undefined), or
 * without `baseUrl` resolved against the page.
 */
function resolve(baseUrl, url, base) {
  const text = typeof url === 'string' ? url : Object.prototype.toString.call(url) === '[object URL]' ? String(url) : undefined;
  if (text === undefined) return undefined;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)) {
    const u = new URL(text);
    return /^https?:$/.test(u.protocol) && !u.username && !u.password ? u.href : undefined;
  }
  if (baseUrl === undefined) {
    if (base === undefined) return undefined;
    const u = new URL(text, base);
    return /^https?:$/.test(u.protocol) && !u.username && !u.password ? u.href : undefined;
  }
  if (typeof baseUrl !== 'string' || !SIMPLE_PATH.test(text)) return undefined;
  const b = new URL(baseUrl);
  if (!/^https?:$/.test(b.protocol) || b.search || b.hash || b.username || b.password || !SIMPLE_PATH.test(b.pathname)) return undefined;
  const dir = b.pathname.endsWith('/') ? b.href : `${b.href}/`;
  return new URL(text.replace(/^\//, ''), dir).href;
}

/** The boot attempt's own abort reason for its time running out (never seen outside). */
const TIMEOUT = new Error('stormguard: boot attempt timed out');

/**
 * Sends `p` (from plan()) through `fetchFn` at once, within its time and `signal`: a promise of
 * `{ started, kind, value }` as the engine's `Client.adopt` takes it (0 a 2xx delivered, `value` its
 * parsed body; 1 another answer, `value` its Response; 2 a 2xx that did not parse; 3 a network error;
 * 4 out of time), or of `{ aborted: true, started }` when `signal` aborted it; undefined if nothing was sent.
 */
export function first(fetchFn, p, signal) {
  const started = performance.now();
  let response, controller, timer, listener;
  try {
    [response, controller, timer, listener] = send(fetchFn, p.href, p.init, p.ms, TIMEOUT, signal);
  } catch {
    return undefined;
  }
  const end = (kind, value) => {
    over(timer, listener, signal);
    return kind === undefined ? { aborted: true, started } : { started, kind, value };
  };
  const failed = (e) => (signal?.aborted ? end() : controller.signal.reason === TIMEOUT ? end(4) : end(3, e));
  return response.then(async (res) => {
    const status = res?.status;
    if (!(status >= 200 && status <= 299)) return end(1, res);
    let text;
    try {
      text = await res.text();
    } catch (e) {
      return failed(e);
    }
    if (!p.json) return end(0, text);
    try {
      return end(0, JSON.parse(text));
    } catch (e) {
      return text.trim() === '' ? end(0, undefined) : end(2, e);
    }
  }, failed);
}
