// Request building that is plumbing with no policy in it, measured smaller
// here than in wasm (bench/README.md). wasm-bindgen bundles this file with
// its glue (src/web/request.rs imports it; scripts/build.mjs minifies it
// into pkg/stormguard.js).

/**
 * The `query` option set on `url`'s search params (not null, not
 * undefined): the URL's own values of each name go, then every pair is
 * added (pairs that repeat a name all go out); undefined values are
 * skipped, as ky and axios skip them, numbers written as JS writes them.
 * 'set', or what is wrong, in the words of request.rs's `Query` (which
 * turns it into the OptionsError).
 */
export function setQuery(url, query) {
  if (typeof query !== 'object') return 'not an object';
  const named = [];
  try {
    const list = typeof query[Symbol.iterator] === 'function' ? Array.from(query) : Object.entries(query);
    for (const pair of list) {
      if (!Array.isArray(pair) || pair.length !== 2) return 'not pairs';
      const k = pair[0];
      const v = pair[1];
      const t = typeof v;
      if (t === 'undefined') continue;
      if (t === 'number' ? !isFinite(v) : t !== 'string' && t !== 'boolean') return t === 'number' ? 'not finite' : 'not a scalar';
      named.push([typeof k === 'string' ? k : '', String(v)]);
    }
  } catch {
    return 'unreadable';
  }
  const params = url.searchParams;
  for (const [k] of named) params.delete(k);
  for (const [k, v] of named) params.append(k, v);
  return 'set';
}

/**
 * A request() body set on `init` as sent (request.rs, `target`): plain
 * objects (null prototype too) and arrays as JSON, with `content-type:
 * application/json` unless `headers` has one; every other BodyInit as it
 * is. 'set', or what is wrong, in the words of request.rs's `Body`: its
 * prototype cannot be read, it cannot be encoded as JSON, or it is a
 * `stream` (a ReadableStream) the host would send as its text.
 */
export function encodeBody(init, body, headers, stream) {
  if (stream && !streamsBodies()) return 'stream as text';
  let step = 'unreadable';
  try {
    if (Array.isArray(body) || (typeof body === 'object' && body !== null && plain(Object.getPrototypeOf(body)))) {
      step = 'not JSON';
      body = JSON.stringify(body);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
  } catch {
    return step;
  }
  init.body = body;
  return 'set';
}

const plain = (proto) => proto === null || proto === Object.prototype;

let streams;
/**
 * Whether the host's Request sends a ReadableStream body as a stream (once
 * per page). Firefox and Safari take it for a string and would send the
 * text "[object ReadableStream]", typed text/plain: what gives them away.
 */
function streamsBodies() {
  if (streams === undefined) {
    try {
      const probe = new Request('data:,', { method: 'POST', body: new ReadableStream(), duplex: 'half' });
      streams = !probe.headers.has('content-type');
    } catch {
      streams = false;
    }
  }
  return streams;
}

/**
 * A Headers' fields as text (request.rs), in its order (sorted, lower-case
 * names): with `values`, `\nname:value` for each (a dedupe key's tail),
 * else `name\n` for each (the names a call gave itself). One call instead
 * of an iterator stepped from wasm, a host call or more per field.
 */
export function headerLines(headers, values) {
  let out = '';
  for (const [name, value] of headers) out += values ? `\n${name}:${value}` : `${name}\n`;
  return out;
}
