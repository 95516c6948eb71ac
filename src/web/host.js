// Host plumbing of src/web/host.rs (wasm-bindgen bundles this file with its
// glue, as it does request.js).

// As the page had them when this module was evaluated: a page (or a test)
// that replaces `Reflect.apply` later does not change how fetch is called.
const apply = Reflect.apply;
const resolved = Promise.resolve();

/**
 * `f(input, init)` on the global object (`init` undefined: `f(input)` alone,
 * as the caller gave it), one microtask from now (host.rs, `fetch_later`):
 * Chromium spends ~150 µs on a fetch whose caller's stack holds wasm frames,
 * and this runs on a clean one. Never through `f`'s own `call` or `bind`.
 */
export function fetchLater(f, input, init) {
  const args = init === undefined ? [input] : [input, init];
  return resolved.then(() => apply(f, globalThis, args));
}

/**
 * The global setTimeout as it is now (a test's fake timers install their
 * own and later put the real one back): the clock runtime/alarm.rs armed
 * its host timer on.
 */
export function timerNow() {
  return globalThis.setTimeout;
}

/** Whether `f` is still the global setTimeout. */
export function timerIs(f) {
  return f === globalThis.setTimeout;
}

// By each class's global name (host.rs, `Class`): a getter of its prototype
// that throws for anything but its instances.
const BRANDS = { Request: 'url', URL: 'href', AbortSignal: 'aborted', ReadableStream: 'locked', ArrayBuffer: 'byteLength' };
const tagOf = Object.prototype.toString;

/**
 * `v instanceof` the global class named `name` (host.rs, `Class`), looked
 * up as it is now, or an instance of that class from another realm (an
 * iframe's Request, whose signal fetch honours): its tag says so and the
 * class's brand-checking getter accepts it. False instead of a throw (a
 * Proxy whose getPrototypeOf trap throws, a host without that class).
 */
export function isA(v, name) {
  try {
    const C = globalThis[name];
    if (v instanceof C) return true;
    if (typeof v !== 'object' || v === null || apply(tagOf, v, []) !== `[object ${name}]`) return false;
    apply(Reflect.getOwnPropertyDescriptor(C.prototype, BRANDS[name]).get, v, []);
    return true;
  } catch {
    return false;
  }
}

// Every stormguard client's attempts sent through the global fetch in this
// realm, whichever copy of the package made the client (two bundles, a
// module re-run by hot reload): one map, kept on the global object under a
// registered symbol, so an installed client knows another's attempt
// (transport.rs). Each attempt's value: the clients that passed it on.
const SENT = Symbol.for('stormguard.sent');
let sent = globalThis[SENT];
if (Object.prototype.toString.call(sent) !== '[object WeakMap]') {
  sent = new WeakMap();
  try {
    Object.defineProperty(globalThis, SENT, { value: sent });
  } catch {
    // A frozen global object: this copy's own map.
  }
}

/** Marks an attempt's `input` and `init` as sent through the global fetch. */
export function markSent(input, init) {
  for (const v of [input, init]) if (typeof v === 'object' && v !== null) sent.set(v, undefined);
}

/**
 * For a `fetch(input, init)` of the client `who` (host.rs, `Sent`): 'no'
 * when neither is an attempt's; 'pass on' when one is (now passed by `who`);
 * 'came back' when `who` passed that attempt on before: the global fetch it
 * passes to leads back to it (a wrapper installed before the client was
 * created, calling it), and passing it again would loop for ever, one
 * microtask after another.
 */
export function wasSent(input, init, who) {
  const v = sent.has(input) ? input : sent.has(init) ? init : undefined;
  if (v === undefined) return 'no';
  let by = sent.get(v);
  if (by === undefined) sent.set(v, (by = new WeakSet()));
  if (by.has(who)) return 'came back';
  by.add(who);
  return 'pass on';
}

/**
 * `e`, what the Request constructor threw for fetch()'s input, with no
 * secret in its message (README, "Threat model"): hosts repeat
 * a URL's userinfo (Node and Chromium: "...includes credentials:
 * http://user:pw@host/") and Node a header value it refused ('Headers.append:
 * "<value>" is an invalid header value.'). Then a TypeError with the userinfo
 * and the quoted value left out; else `e` itself.
 */
export function withoutSecrets(e) {
  let said;
  try {
    said = e instanceof Error ? e.message : undefined;
  } catch {
    return e;
  }
  if (typeof said !== 'string') return e;
  let safe = said.replace(/\b([a-z][a-z\d+.-]*:\/\/)[^\s/?#@]*@/gi, '$1');
  if (/\bvalue\b/i.test(safe)) safe = safe.replace(/"[\s\S]*"/, '"…"');
  return safe === said ? e : new TypeError(safe);
}
