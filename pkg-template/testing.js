// stormguard/testing: faultyFetch, a transport for the `fetch` option that
// answers from a script, so an app's own resilience is tested in
// milliseconds without a failing server. Plain ESM with no import: nothing of
// it enters the main entry or the wasm.
//
// Time: a delay waits on the global setTimeout as it is when the delay
// starts, and the engine's own timers (backoff, attempt timeouts, open
// periods, deadlines) are set through the global setTimeout too, its clock
// moved on by each timer that fires even when performance.now stands still
// (src/web/runtime). So Vitest's and Jest's fake timers drive all of it.

const TEXT = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 408: 'Request Timeout', 409: 'Conflict', 429: 'Too Many Requests', 500: 'Internal Server Error',
  502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};
const NO_BODY = new Set([101, 204, 205, 304]);

/** Whether `rule.match` takes `request`: a string is contained in the URL, a RegExp tests it, a function decides. */
function matches(match, request) {
  if (match === undefined || match === '*') return true;
  if (typeof match === 'string') return request.url.includes(match);
  if (match instanceof RegExp) {
    match.lastIndex = 0;
    return match.test(request.url);
  }
  if (typeof match === 'function') return Boolean(match(request));
  throw new TypeError('faultyFetch: a rule\'s `match` is a string, a RegExp or a function of the Request');
}

/** The signal's reason, as fetch rejects with it. */
const reasonOf = (signal) => signal.reason ?? new DOMException('This operation was aborted', 'AbortError');

/** Resolves after `ms` on the global setTimeout (fake timers move it); rejects when `signal` aborts. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(reasonOf(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(reasonOf(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Never settles unless `signal` aborts. */
function never(signal) {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(reasonOf(signal));
    signal.addEventListener('abort', () => reject(reasonOf(signal)), { once: true });
  });
}

/** A Response from `{ status, statusText, headers, body, json, retryAfter }`. */
function respond(spec) {
  const status = spec.status ?? 200;
  const headers = new Headers(spec.headers);
  let body = spec.body ?? null;
  if (spec.json !== undefined) {
    body = JSON.stringify(spec.json);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }
  if (spec.retryAfter !== undefined) headers.set('retry-after', String(spec.retryAfter));
  return new Response(NO_BODY.has(status) ? null : body, { status, statusText: spec.statusText ?? TEXT[status] ?? '', headers });
}

/** 200 headers, then a body that never ends (its stream errors when `signal` aborts). */
function stalled(signal) {
  let ctrl;
  const stream = new ReadableStream({ start(c) { ctrl = c; } });
  const onAbort = () => {
    try {
      ctrl.error(reasonOf(signal));
    } catch {
      // Already closed or errored.
    }
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return new Response(stream, { status: 200, statusText: 'OK', headers: { 'content-type': 'application/json' } });
}

/** A connection reset, as Node's fetch rejects for one. */
function reset() {
  const cause = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  return new TypeError('fetch failed', { cause });
}

/**
 * `faultyFetch(script, fallback?)`: a fetch that answers each request from the
 * first rule of `script` (one rule or an array) whose `match` takes its URL
 * and whose `reply` list is not used up, one item per request, then from
 * `fallback` (any reply item, or a function of the Request such as
 * `(req) => realFetch(req)`), else 200 with an empty JSON object.
 * Items: a status number; 'reset' (a connection reset); 'stall' (200 and a
 * body that never ends); 'hang' (no answer at all); `{ delayMs, ...item }`
 * (waits, then answers as the rest of the object, or as the fallback when
 * nothing else is given); `{ status, retryAfter, headers, body, json }`; a
 * Response; a function of the Request returning any item. Every wait ends
 * with the request's signal, as fetch's does. `.calls` records every request.
 */
export function faultyFetch(script = [], fallback) {
  const rules = (Array.isArray(script) ? script : [script]).map((r) => {
    if (typeof r !== 'object' || r === null || !Array.isArray(r.reply ?? [])) {
      throw new TypeError('faultyFetch: each rule is { match, reply: [...] }');
    }
    matches(r.match, { url: '' }); // a wrong kind of match throws here, not inside a test's call
    return { match: r.match, reply: r.reply ?? [], next: 0 };
  });
  const calls = [];

  async function answer(item, request) {
    for (let depth = 0; typeof item === 'function' && depth < 8; depth++) item = await item(request);
    const { signal } = request;
    if (signal.aborted) throw reasonOf(signal);
    if (item === undefined || item === null) return respond({ json: {} });
    if (typeof item === 'number') return respond({ status: item });
    if (item === 'reset') throw reset();
    if (item === 'stall') return stalled(signal);
    if (item === 'hang') return never(signal);
    if (item instanceof Response) return item.bodyUsed ? item : item.clone();
    if (typeof item === 'object') {
      const { delayMs, ...rest } = item;
      if (delayMs !== undefined) {
        await sleep(delayMs, signal);
        return Object.keys(rest).length ? answer(rest, request) : answer(fallback, request);
      }
      if (rest.reply !== undefined) return answer(rest.reply, request);
      return respond(rest);
    }
    throw new TypeError(`faultyFetch: unknown reply ${JSON.stringify(item)}`);
  }

  async function fetch(input, init) {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    const rule = rules.find((r) => r.next < r.reply.length && matches(r.match, request));
    const item = rule ? rule.reply[rule.next++] : fallback;
    calls.push({ method: request.method, url: request.url, headers: new Headers(request.headers), request, reply: rule ? item : 'fallback' });
    return answer(item, request);
  }
  fetch.calls = calls;
  return fetch;
}
