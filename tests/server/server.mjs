// Fault-injection HTTP server for stormguard's tests and storm benchmark.
// Node >= 20 built-ins only. Listens on loopback only. See README.md next to this file.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const BODY_CAP = 1024 * 1024; // request bytes kept per request
const LOG_CAP_DEFAULT = 100_000; // entries kept per id
const IDEM_CAP = 100_000; // idempotency keys kept per id
const MAX_DELAY_MS = 10 * 60 * 1000;
const MAX_BODY_BYTES = 1024 * 1024 * 1024; // /body upper bound (1 GiB)
const PER_SECOND_WINDOW = 120;

const CAPACITY_DEFAULTS = Object.freeze({
  c: 20,
  serviceMs: 50,
  queue: 200,
  gatewayMs: 1000,
  mode: 'normal', // normal | outage | brownout
  factor: 0.3, // brownout capacity factor
  shed: false, // false | true (drop expired queued work) | 'early' (also 503 work that cannot finish in time)
  outageKind: 'status', // status (503) | reset (destroy the socket)
  retryAfter: null, // verbatim Retry-After on the model's 503s, or null
});

const ENDPOINTS = new Set([
  '/echo', '/delay', '/tail', '/hang', '/fail-first', '/slow-first', '/reset', '/reset-mid', '/drop', '/body', '/json',
  '/invalid-json', '/headers-huge', '/redirect-loop', '/truncated', '/capacity', '/ratelimit', '/auth', '/cookie',
]);

// The rate-limit field spellings /ratelimit can answer with.
const RATELIMIT_FORMS = new Set(['ietf', 'dict', 'draft', 'x', 'x-dash', 'none']);
const RATELIMIT_EXPOSED = 'RateLimit, RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, '
  + 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Rate-Limit-Limit, X-Rate-Limit-Remaining, X-Rate-Limit-Reset';

// The fields of one /ratelimit answer: `remaining` requests left of `quota`, the window ending in
// `leftMs` (sent as whole seconds, rounded up), `windowS` long. `reset`: delta | epoch | date.
export function rateLimitFields(form, { quota, remaining, leftMs, windowS, reset = 'delta', nowEpochMs = Date.now() }) {
  const t = Math.max(0, Math.ceil(leftMs / 1000));
  const endEpoch = nowEpochMs + t * 1000;
  const legacyReset = reset === 'epoch'
    ? String(Math.ceil(endEpoch / 1000))
    : reset === 'date' ? new Date(Math.ceil(endEpoch / 1000) * 1000).toUTCString() : String(t);
  const legacy = (prefix) => ({
    [`${prefix}-Limit`]: String(quota),
    [`${prefix}-Remaining`]: String(remaining),
    [`${prefix}-Reset`]: legacyReset,
  });
  switch (form) {
    case 'ietf':
      return { RateLimit: `"default";r=${remaining};t=${t}`, 'RateLimit-Policy': `"default";q=${quota};w=${windowS}` };
    case 'dict':
      return { RateLimit: `limit=${quota}, remaining=${remaining}, reset=${t}` };
    case 'draft':
      return legacy('RateLimit');
    case 'x':
      return legacy('X-RateLimit');
    case 'x-dash':
      return legacy('X-Rate-Limit');
    default:
      return {};
  }
}

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.cjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

function isLoopbackHost(host) {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function intParam(v, def, min = -Infinity, max = Infinity) {
  if (v === undefined || v === null || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n)) return def;
  return Math.min(max, Math.max(min, Math.floor(n)));
}

function numParam(v, def, min = -Infinity, max = Infinity) {
  if (v === undefined || v === null || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n)) return def;
  return Math.min(max, Math.max(min, n));
}

// Header values must not contain CR/LF/NUL or other control characters.
function headerSafe(v) {
  return String(v).replace(/[^\t\x20-\x7e\x80-\xff]/g, '');
}

function newIdState() {
  return {
    seq: 0,
    log: [],
    dropped: 0,
    count: 0,
    preflights: 0,
    concurrentNow: 0,
    maxConcurrent: 0,
    failFirst: new Map(),
    idem: new Map(),
    executions: 0,
    quotas: new Map(),
  };
}

export async function startServer({
  port = 0,
  host = '127.0.0.1',
  staticRoot = null,
  // Cache-Control of static files; the start-up benchmark's warm loads need them cacheable.
  staticCacheControl = 'no-store',
  extraPorts = 0,
  logCap = LOG_CAP_DEFAULT,
  close: alwaysClose = false,
} = {}) {
  if (!isLoopbackHost(host)) throw new Error(`refusing to listen on non-loopback host ${host}`);
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  // Global switch: answer every response with `Connection: close` (see README: Chromium's own retries).
  const serverCfg = { close: Boolean(alwaysClose) };
  const root = staticRoot ? fs.realpathSync(path.resolve(staticRoot)) : null;

  // ---- timers: every timer goes through this registry so close() leaves none behind
  const timers = new Set();
  function later(fn, ms) {
    const h = setTimeout(() => {
      timers.delete(h);
      fn();
    }, Math.max(0, ms));
    timers.add(h);
    return h;
  }
  function cancel(h) {
    if (h) {
      clearTimeout(h);
      timers.delete(h);
    }
  }

  // ---- per-id state
  const states = new Map();
  function stateFor(id) {
    let s = states.get(id);
    if (!s) {
      s = newIdState();
      states.set(id, s);
    }
    return s;
  }
  function pushLog(state, entry) {
    state.log.push(entry);
    if (state.log.length > logCap + Math.max(1, Math.floor(logCap / 10))) {
      const n = state.log.length - logCap;
      state.log.splice(0, n);
      state.dropped += n;
    }
  }

  // ---- capacity model (global)
  const cap = {
    cfg: { ...CAPACITY_DEFAULTS },
    busy: 0,
    q: [],
    qHead: 0,
    queuedLive: 0,
    counters: null,
    perSecond: new Map(),
    // a patch given `forMs`: the timer that puts its fields back
    revert: null,
  };
  function resetCapacityCounters() {
    cap.counters = {
      arrivals: 0,
      served: 0,
      rejected504: 0,
      rejected503: 0,
      resets: 0,
      clientGone: 0,
      shed: 0,
      completed: 0,
      wasted: 0,
    };
    cap.perSecond = new Map();
  }
  resetCapacityCounters();

  // ---- CORS and common headers
  function corsHeaders(req) {
    const origin = req.headers.origin;
    const h = {
      'Access-Control-Allow-Origin': origin ? headerSafe(origin) : '*',
      'Access-Control-Expose-Headers': `*, Retry-After, X-Request-Seq, Content-Length, Content-Type, Date, X-Huge, ${RATELIMIT_EXPOSED}`,
      'Timing-Allow-Origin': '*',
    };
    if (origin) {
      h['Access-Control-Allow-Credentials'] = 'true';
      h.Vary = 'Origin';
    }
    return h;
  }

  // ---- the request handler
  async function handle(req, res) {
    const arrival = now();
    res.on('error', () => {});
    req.on('error', () => {});

    let url;
    try {
      url = new URL(req.url, 'http://127.0.0.1');
    } catch {
      url = new URL('http://127.0.0.1/');
    }
    const pathname = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const id = query.id ?? 'default';
    const isControl = pathname.startsWith('/_');
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;

    const ctx = {
      req,
      res,
      url,
      pathname,
      query,
      id,
      state: null,
      entry: null,
      closed: false,
      done: false,
      onClose: new Set(),
      body: null,
    };
    ctx.sleep = (ms) =>
      new Promise((resolve) => {
        if (ctx.closed) return resolve(false);
        let h = null;
        const onc = () => {
          cancel(h);
          resolve(false);
        };
        h = later(() => {
          ctx.onClose.delete(onc);
          resolve(true);
        }, ms);
        ctx.onClose.add(onc);
      });

    for (const [k, v] of Object.entries(corsHeaders(req))) res.setHeader(k, v);
    const closeParam = query.close;
    if (closeParam === '1' || closeParam === 'true' || (serverCfg.close && closeParam !== '0' && closeParam !== 'false')) {
      res.setHeader('Connection', 'close');
    }

    if (!isControl) {
      const state = stateFor(id);
      ctx.state = state;
      const seq = ++state.seq;
      const entry = {
        seq,
        path: pathname,
        method: req.method,
        query,
        t: arrival,
        idempotencyKey: req.headers['idempotency-key'] ?? null,
        // The W3C trace context each attempt carried (stormguard/otel's tests).
        traceparent: req.headers.traceparent ?? null,
        headers: Object.keys(req.headers),
        status: null,
        finishedAt: null,
        closedAt: null,
        preflight,
        serverClosed: false,
      };
      ctx.entry = entry;
      pushLog(state, entry);
      res.setHeader('X-Request-Seq', String(seq));
      if (preflight) {
        state.preflights++;
      } else {
        state.count++;
        state.concurrentNow++;
        if (state.concurrentNow > state.maxConcurrent) state.maxConcurrent = state.concurrentNow;
      }
    }

    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (ctx.state && !preflight) ctx.state.concurrentNow--;
    };
    res.on('finish', () => {
      ctx.done = true;
      if (ctx.entry) {
        ctx.entry.finishedAt = now();
        ctx.entry.status = res.statusCode;
      }
      release();
    });
    res.on('close', () => {
      if (!res.writableFinished && !ctx.closed) {
        ctx.closed = true;
        if (ctx.entry) {
          ctx.entry.closedAt = now();
          if (ctx.entry.status === null && res.headersSent) ctx.entry.status = res.statusCode;
        }
        for (const fn of [...ctx.onClose]) {
          try {
            fn();
          } catch {}
        }
        ctx.onClose.clear();
      }
      release();
    });

    if (preflight) {
      const acrh = req.headers['access-control-request-headers'];
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
        'Access-Control-Allow-Headers': acrh ? headerSafe(acrh) : '*',
        'Access-Control-Max-Age': '600',
        ...(req.headers['access-control-request-private-network'] ? { 'Access-Control-Allow-Private-Network': 'true' } : {}),
      });
      if (ctx.entry) ctx.entry.status = 204;
      res.end();
      return;
    }

    ctx.body = await readBody(req);
    if (ctx.closed) return;

    try {
      await dispatch(ctx);
    } catch (err) {
      if (!res.headersSent && !ctx.closed) {
        sendJson(ctx, 500, { error: 'internal', message: String(err && err.message) });
      } else if (!ctx.closed && !res.writableEnded) {
        res.destroy();
      }
    }
  }

  function readBody(req) {
    return new Promise((resolve) => {
      const chunks = [];
      let kept = 0;
      let total = 0;
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        const buf = Buffer.concat(chunks);
        resolve({ text: buf.toString('utf8'), bytes: total, truncated: total > kept });
      };
      req.on('data', (c) => {
        total += c.length;
        if (kept < BODY_CAP) {
          const take = c.length <= BODY_CAP - kept ? c : c.subarray(0, BODY_CAP - kept);
          chunks.push(take);
          kept += take.length;
        }
      });
      req.on('end', finish);
      req.on('close', finish);
      req.on('error', finish);
    });
  }

  // ---- response helpers
  function setStatus(ctx, status) {
    if (ctx.entry) ctx.entry.status = status;
  }
  function send(ctx, status, body, headers = {}) {
    const { res } = ctx;
    if (ctx.closed || res.headersSent) return;
    const buf = Buffer.isBuffer(body) ? body : Buffer.from(body ?? '');
    const noBody = status === 204 || status === 205 || status === 304;
    const h = { ...headers };
    if (!noBody) h['Content-Length'] = String(buf.length);
    for (const [k, v] of Object.entries(h)) {
      try {
        res.setHeader(k, v);
      } catch {
        res.setHeader(k, headerSafe(v));
      }
    }
    res.statusCode = status;
    setStatus(ctx, status);
    if (noBody) res.end();
    else res.end(buf);
  }
  function sendJson(ctx, status, obj, headers = {}) {
    send(ctx, status, JSON.stringify(obj), { 'Content-Type': 'application/json', ...headers });
  }
  function retryAfterHeader(v) {
    return v === undefined || v === null ? {} : { 'Retry-After': headerSafe(v) };
  }
  // Ends the connection without (or in the middle of) a response.
  // kind 'rst' sends a TCP reset where possible, 'fin' closes normally.
  function killSocket(ctx, kind = 'rst') {
    if (ctx.entry) ctx.entry.serverClosed = true;
    const s = ctx.req.socket;
    if (!s || s.destroyed) return;
    if (kind !== 'fin' && typeof s.resetAndDestroy === 'function') {
      try {
        s.resetAndDestroy();
        return;
      } catch {}
    }
    s.destroy();
  }
  // Writes a hand-made response head straight to the socket (for truncated / broken responses).
  function rawHead(ctx, status, reason, headers) {
    const all = { ...corsHeaders(ctx.req), ...headers, Connection: 'close' };
    if (ctx.entry) all['X-Request-Seq'] = String(ctx.entry.seq);
    let s = `HTTP/1.1 ${status} ${reason}\r\n`;
    for (const [k, v] of Object.entries(all)) s += `${k}: ${headerSafe(v)}\r\n`;
    setStatus(ctx, status);
    return s + '\r\n';
  }

  // ---- endpoints
  async function dispatch(ctx) {
    const { pathname, query, req } = ctx;
    if (pathname.startsWith('/_')) return control(ctx);
    if (pathname.startsWith('/status/')) return statusEndpoint(ctx);
    // /capacity/<name>: more endpoints (paths, so a client keeps a breaker per endpoint) of one backend
    if (pathname.startsWith('/capacity/')) return capacityArrival(ctx);
    // /fail-first/<name>: more endpoints (paths, each with a breaker of its own) that fail first
    if (pathname.startsWith('/fail-first/')) return failFirst(ctx, pathname);
    if (!ENDPOINTS.has(pathname)) return staticOr404(ctx);

    switch (pathname) {
      case '/echo': {
        const headers = {};
        for (const [k, v] of Object.entries(req.headers)) {
          headers[k] = k === 'cookie' || k === 'authorization' ? '<redacted>' : v;
        }
        return sendJson(ctx, 200, {
          method: req.method,
          path: pathname,
          query,
          search: ctx.url.search,
          headers,
          body: ctx.body.text,
          bodyBytes: ctx.body.bytes,
          bodyTruncated: ctx.body.truncated,
          idempotencyKey: req.headers['idempotency-key'] ?? null,
        });
      }

      case '/cookie': {
        // The test's own cookie, for credentials tests: `set=NAME=VALUE` sets it
        // (SameSite=Lax: sent to another port of this host, a same-site but
        // cross-origin request, only with credentials 'include'), `clear=NAME`
        // expires it; the answer shows the Cookie the request carried.
        const set = typeof query.set === 'string' && /^[\w-]+=[\w-]*$/.test(query.set) ? query.set : null;
        const clear = typeof query.clear === 'string' && /^[\w-]+$/.test(query.clear) ? query.clear : null;
        const cookies = [];
        if (set) cookies.push(`${set}; Path=/; SameSite=Lax`);
        if (clear) cookies.push(`${clear}=; Path=/; SameSite=Lax; Max-Age=0`);
        return sendJson(ctx, 200, { cookie: req.headers.cookie ?? null }, cookies.length ? { 'Set-Cookie': cookies } : {});
      }

      case '/delay': {
        let ms;
        if (query.ms !== undefined) ms = numParam(query.ms, 0, 0, MAX_DELAY_MS);
        else {
          const min = numParam(query.min, 0, 0, MAX_DELAY_MS);
          const max = numParam(query.max, min, min, MAX_DELAY_MS);
          ms = min + Math.random() * (max - min);
        }
        const started = now();
        const ok = await ctx.sleep(ms);
        if (!ok) return;
        const status = intParam(query.status, 200, 200, 599);
        return sendJson(ctx, status, { ok: status < 400, waitedMs: now() - started }, retryAfterHeader(query.retryAfter));
      }

      case '/hang':
        // Never answers; the entry gets closedAt when the client goes away. No timer is involved.
        return;

      case '/auth': {
        // A bearer-token check: 200 when Authorization is `<scheme> <token>` with a token in `accept`
        // (comma-separated), else 401. `delay` waits first (so concurrent calls all hold the old token).
        // A token in `refuse` (comma-separated) is a user over their quota: 429 with `retryAfter`.
        if (!(await ctx.sleep(numParam(query.delay, 0, 0, MAX_DELAY_MS)))) return;
        const scheme = query.scheme ?? 'Bearer';
        const accept = String(query.accept ?? '').split(',').filter(Boolean);
        const given = req.headers.authorization ?? '';
        const token = given.startsWith(`${scheme} `) ? given.slice(scheme.length + 1) : null;
        if (token !== null && String(query.refuse ?? '').split(',').includes(token)) {
          return sendJson(ctx, 429, { ok: false, token }, retryAfterHeader(query.retryAfter));
        }
        if (token !== null && accept.includes(token)) {
          return sendJson(ctx, 200, { ok: true, token, method: req.method, body: ctx.body.text });
        }
        return sendJson(ctx, 401, { ok: false, given: given === '' ? null : given }, { 'WWW-Authenticate': scheme });
      }

      case '/fail-first':
        return failFirst(ctx, '');

      case '/tail': {
        // A long-tail backend: with probability p the answer takes `slow` ms, else `fast` ms.
        const p = numParam(query.p, 0.05, 0, 1);
        const slow = Math.random() < p;
        const ms = slow ? numParam(query.slow, 1000, 0, MAX_DELAY_MS) : numParam(query.fast, 20, 0, MAX_DELAY_MS);
        if (!(await ctx.sleep(ms))) return;
        return sendJson(ctx, 200, { ok: true, slow });
      }

      case '/slow-first': {
        // A long tail on demand: attempts 1..n answer 200 after `ms`, later ones at once.
        const n = intParam(query.n, 1, 0);
        const key = `slow:${query.key ?? ''}`;
        const attempt = (ctx.state.failFirst.get(key) ?? 0) + 1;
        ctx.state.failFirst.set(key, attempt);
        const slow = attempt <= n;
        if (slow && !(await ctx.sleep(numParam(query.ms, 2000, 0, MAX_DELAY_MS)))) return;
        return sendJson(ctx, 200, { ok: true, attempt, slow });
      }

      case '/ratelimit': {
        // A fixed-window quota per id (and key): `quota` requests per `window` seconds, the window
        // starting with its first request; beyond it `status` (default 429). Every answer carries the
        // fields of `form`; `retryAfter=1` adds Retry-After (whole seconds to the reset) to refusals.
        const quota = intParam(query.quota, 10, 0, 1e9);
        const windowS = intParam(query.window, 1, 1, 86400);
        const form = RATELIMIT_FORMS.has(query.form) ? query.form : 'ietf';
        const key = query.key ?? '';
        const t = now();
        let w = ctx.state.quotas.get(key);
        if (!w || t >= w.start + windowS * 1000) {
          w = { start: t, used: 0 };
          ctx.state.quotas.set(key, w);
        }
        const leftMs = Math.max(0, windowS * 1000 - (t - w.start));
        const allowed = w.used < quota;
        if (allowed) w.used += 1;
        const remaining = quota - w.used;
        const headers = rateLimitFields(form, { quota, remaining, leftMs, windowS, reset: query.reset });
        if (allowed) return sendJson(ctx, 200, { ok: true, remaining }, headers);
        if (query.retryAfter === '1') headers['Retry-After'] = String(Math.ceil(leftMs / 1000));
        const status = intParam(query.status, 429, 400, 599);
        return sendJson(ctx, status, { ok: false, status, remaining }, headers);
      }

      case '/reset':
        return killSocket(ctx, query.kind);

      case '/reset-mid': {
        const bytes = intParam(query.bytes, 1024, 0, MAX_BODY_BYTES);
        const total = Math.max(bytes + 1, intParam(query.total, bytes + 1024, 0));
        const socket = req.socket;
        const head = rawHead(ctx, 200, 'OK', { 'Content-Type': 'text/plain', 'Content-Length': String(total) });
        socket.write(head);
        await new Promise((resolve) => socket.write(Buffer.alloc(bytes, 'x'), () => resolve()));
        await ctx.sleep(intParam(query.wait, 50, 0, 10_000));
        return killSocket(ctx, query.kind);
      }

      case '/truncated': {
        const bytes = intParam(query.bytes, 10, 0, MAX_BODY_BYTES);
        const declared = Math.max(bytes + 1, intParam(query.length, 100, 0));
        const socket = req.socket;
        if (ctx.entry) ctx.entry.serverClosed = true;
        socket.write(rawHead(ctx, 200, 'OK', { 'Content-Type': 'text/plain', 'Content-Length': String(declared) }));
        socket.write(Buffer.alloc(bytes, 'x'), () => {
          socket.end();
          later(() => socket.destroy(), 1000);
        });
        return;
      }

      case '/drop': {
        const st = ctx.state;
        const key = req.headers['idempotency-key'] ?? null;
        if (key !== null && st.idem.has(key)) {
          return sendJson(ctx, 200, { ...st.idem.get(key), replay: true });
        }
        const result = { executed: ++st.executions, key };
        if (key !== null) {
          st.idem.set(key, result);
          if (st.idem.size > IDEM_CAP) st.idem.delete(st.idem.keys().next().value);
        }
        const p = numParam(query.p, 1, 0, 1);
        if (Math.random() < p) return killSocket(ctx, query.kind);
        return sendJson(ctx, 200, { ...result, replay: false });
      }

      case '/body':
        return bodyEndpoint(ctx);

      case '/json':
        return send(ctx, 200, query.body ?? '{"ok": tru', { 'Content-Type': 'application/json' });

      case '/invalid-json':
        return send(ctx, 200, '{"ok": true, "items": [1, 2,', { 'Content-Type': 'application/json' });

      case '/headers-huge': {
        const kb = intParam(query.kb, 64, 0, 16 * 1024);
        return sendJson(ctx, 200, { ok: true, kb }, { 'X-Huge': 'h'.repeat(kb * 1024) });
      }

      case '/redirect-loop':
        return send(ctx, 302, '', { Location: pathname + ctx.url.search });

      case '/capacity':
        return capacityArrival(ctx);
    }
    return staticOr404(ctx);
  }

  // The first n requests (per id, key and /fail-first/<name> path) fail, the rest succeed.
  function failFirst(ctx, path) {
    const { query } = ctx;
    const n = intParam(query.n, 1, 0);
    const key = path + (query.key ?? '');
    const attempt = (ctx.state.failFirst.get(key) ?? 0) + 1;
    ctx.state.failFirst.set(key, attempt);
    if (attempt <= n) {
      if (query.status === 'reset') return killSocket(ctx, query.kind);
      const status = intParam(query.status, 503, 200, 599);
      return sendJson(ctx, status, { ok: false, status, attempt }, retryAfterHeader(query.retryAfter));
    }
    return sendJson(ctx, 200, { ok: true, attempt });
  }

  async function statusEndpoint(ctx) {
    const { query, pathname } = ctx;
    const code = Number(pathname.slice('/status/'.length));
    if (!Number.isInteger(code) || code < 200 || code > 599) {
      return sendJson(ctx, 400, { error: 'status must be an integer 200..599' });
    }
    if (query.delay !== undefined) {
      const ok = await ctx.sleep(numParam(query.delay, 0, 0, MAX_DELAY_MS));
      if (!ok) return;
    }
    const headers = retryAfterHeader(query.retryAfter);
    if (query.body !== undefined) {
      const types = { json: 'application/json', problem: 'application/problem+json' };
      return send(ctx, code, query.body, { 'Content-Type': types[query.type] ?? 'text/plain; charset=utf-8', ...headers });
    }
    return sendJson(ctx, code, { status: code }, headers);
  }

  async function bodyEndpoint(ctx) {
    const { query, res } = ctx;
    const total = intParam(query.bytes, 1024, 0, MAX_BODY_BYTES);
    const status = intParam(query.status, 200, 200, 599);
    const chunk = intParam(query.chunk, 64 * 1024, 1, 16 * 1024 * 1024);
    const interval = numParam(query.interval, 0, 0, MAX_DELAY_MS);
    const json = query.type === 'json';
    const filler = Buffer.alloc(Math.min(chunk, total) || 1, 'x');
    // For type=json the body is one JSON string literal "xxx…x" of exactly `total` bytes
    // (total 1 -> "0", total 0 -> empty body).
    const byteAt = (i) => {
      if (!json) return 0x78;
      if (total === 1) return 0x30;
      return i === 0 || i === total - 1 ? 0x22 : 0x78;
    };
    const chunkAt = (off, len) => {
      if (!json || (off > 0 && off + len < total)) return len === filler.length ? filler : filler.subarray(0, len);
      const b = Buffer.alloc(len);
      for (let i = 0; i < len; i++) b[i] = byteAt(off + i);
      return b;
    };
    res.statusCode = status;
    res.setHeader('Content-Type', json ? 'application/json' : 'text/plain; charset=utf-8');
    res.setHeader('Content-Length', String(total));
    for (const [k, v] of Object.entries(retryAfterHeader(query.retryAfter))) res.setHeader(k, v);
    setStatus(ctx, status);
    if (total === 0) return res.end();
    res.flushHeaders();
    let off = 0;
    while (off < total) {
      if (ctx.closed) return;
      const len = Math.min(chunk, total - off);
      const ok = res.write(chunkAt(off, len));
      off += len;
      if (off >= total) break;
      if (!ok) {
        await new Promise((resolve) => {
          const done = () => {
            res.off('drain', done);
            ctx.onClose.delete(done);
            resolve();
          };
          res.on('drain', done);
          ctx.onClose.add(done);
        });
      }
      if (interval > 0) await ctx.sleep(interval);
    }
    if (!ctx.closed) res.end();
  }

  // ---- capacity model
  function effectiveSlots() {
    const { c, mode, factor } = cap.cfg;
    return mode === 'brownout' ? Math.max(1, Math.round(c * factor)) : c;
  }
  function bucket() {
    const sec = Math.floor(now() / 1000);
    let b = cap.perSecond.get(sec);
    if (!b) {
      b = { t: sec, arrivals: 0, ok: 0, failed: 0, gone: 0 };
      cap.perSecond.set(sec, b);
      for (const k of cap.perSecond.keys()) {
        if (k <= sec - PER_SECOND_WINDOW) cap.perSecond.delete(k);
        else break;
      }
    }
    return b;
  }
  function capAnswer(item, outcome, status, obj, headers) {
    if (item.outcome !== null) return;
    item.outcome = outcome;
    const k = cap.counters;
    if (outcome === 'ok') {
      k.served++;
      bucket().ok++;
    } else {
      if (outcome === '504') k.rejected504++;
      else if (outcome === '503') k.rejected503++;
      else if (outcome === 'reset') k.resets++;
      bucket().failed++;
    }
    cancel(item.gatewayTimer);
    item.gatewayTimer = null;
    if (outcome === 'reset') return killSocket(item.ctx, 'rst');
    sendJson(item.ctx, status, obj, headers);
  }
  function capacityArrival(ctx) {
    const cfg = cap.cfg;
    cap.counters.arrivals++;
    bucket().arrivals++;
    const t = now();
    const item = {
      ctx,
      arrivedAt: t,
      deadline: t + cfg.gatewayMs,
      outcome: null,
      gatewayTimer: null,
      inQueue: false,
      shed: false,
    };
    ctx.onClose.add(() => {
      if (item.outcome === null) {
        item.outcome = 'clientGone';
        cap.counters.clientGone++;
        bucket().gone++;
      }
    });
    const ra = retryAfterHeader(cfg.retryAfter);
    if (cfg.mode === 'outage') {
      if (cfg.outageKind === 'reset') return capAnswer(item, 'reset');
      return capAnswer(item, '503', 503, { status: 503, error: 'outage' }, ra);
    }
    const idle = cap.busy < effectiveSlots() && cap.queuedLive === 0;
    if (!idle && cap.queuedLive >= cfg.queue) {
      return capAnswer(item, '503', 503, { status: 503, error: 'queue full' }, ra);
    }
    item.gatewayTimer = later(() => {
      item.gatewayTimer = null;
      if (item.inQueue && cap.cfg.shed && !item.shed) shedItem(item);
      capAnswer(item, '504', 504, { status: 504, error: 'gateway timeout' });
    }, cfg.gatewayMs);
    if (idle) return startService(item);
    item.inQueue = true;
    cap.q.push(item);
    cap.queuedLive++;
  }
  function shedItem(item) {
    item.shed = true;
    cap.queuedLive--;
    cap.counters.shed++;
  }
  function startService(item) {
    cap.busy++;
    const started = now();
    later(() => {
      cap.busy--;
      cap.counters.completed++;
      if (item.outcome === null) {
        capAnswer(item, 'ok', 200, { ok: true, queuedMs: started - item.arrivedAt, serviceMs: now() - started });
      } else {
        cap.counters.wasted++;
      }
      pump();
    }, cap.cfg.serviceMs);
  }
  function pump() {
    while (cap.busy < effectiveSlots() && cap.qHead < cap.q.length) {
      const item = cap.q[cap.qHead];
      cap.q[cap.qHead] = undefined;
      cap.qHead++;
      item.inQueue = false;
      if (item.shed) continue; // already removed from the live count
      const t = now();
      const { shed, serviceMs } = cap.cfg;
      if (shed && t >= item.deadline) {
        shedItem(item);
        capAnswer(item, '504', 504, { status: 504, error: 'gateway timeout' });
        continue;
      }
      if (shed === 'early' && t + serviceMs > item.deadline) {
        shedItem(item);
        capAnswer(item, '503', 503, { status: 503, error: 'shed' }, retryAfterHeader(cap.cfg.retryAfter));
        continue;
      }
      cap.queuedLive--;
      startService(item);
    }
    if (cap.qHead > 1024 && cap.qHead * 2 > cap.q.length) {
      cap.q = cap.q.slice(cap.qHead);
      cap.qHead = 0;
    }
  }
  function capacitySnapshot() {
    const cur = Math.floor(now() / 1000);
    const perSecond = [];
    const keys = [...cap.perSecond.keys()];
    if (keys.length) {
      const from = Math.max(keys[0], cur - PER_SECOND_WINDOW + 1);
      for (let s = from; s <= cur; s++) {
        perSecond.push(cap.perSecond.get(s) ?? { t: s, arrivals: 0, ok: 0, failed: 0, gone: 0 });
      }
    }
    const k = cap.counters;
    return {
      ...cap.cfg,
      slots: effectiveSlots(),
      busy: cap.busy,
      queued: cap.queuedLive,
      ...k,
      pending: k.arrivals - k.served - k.rejected504 - k.rejected503 - k.resets - k.clientGone,
      perSecond,
    };
  }
  function configureCapacity(patch) {
    const before = cap.cfg;
    const cfg = { ...cap.cfg };
    if (patch.defaults === true) Object.assign(cfg, CAPACITY_DEFAULTS);
    if (patch.c !== undefined) cfg.c = intParam(patch.c, cfg.c, 1, 100_000);
    if (patch.serviceMs !== undefined) cfg.serviceMs = numParam(patch.serviceMs, cfg.serviceMs, 0, MAX_DELAY_MS);
    if (patch.queue !== undefined) cfg.queue = intParam(patch.queue, cfg.queue, 0, 10_000_000);
    if (patch.gatewayMs !== undefined) cfg.gatewayMs = numParam(patch.gatewayMs, cfg.gatewayMs, 0, MAX_DELAY_MS);
    if (patch.factor !== undefined) cfg.factor = numParam(patch.factor, cfg.factor, 0, 1000);
    if (patch.mode !== undefined) {
      if (!['normal', 'outage', 'brownout'].includes(patch.mode)) throw new Error(`bad mode ${patch.mode}`);
      cfg.mode = patch.mode;
    }
    if (patch.shed !== undefined) {
      if (![true, false, 'early'].includes(patch.shed)) throw new Error('shed must be true, false or "early"');
      cfg.shed = patch.shed;
    }
    if (patch.outageKind !== undefined) {
      if (!['status', 'reset'].includes(patch.outageKind)) throw new Error('outageKind must be "status" or "reset"');
      cfg.outageKind = patch.outageKind;
    }
    if (patch.retryAfter !== undefined) cfg.retryAfter = patch.retryAfter === null ? null : String(patch.retryAfter);
    // A fault of a set length, timed here: a client's own timer runs late when its process is busy,
    // and a 300 ms blip timed by 100 tabs' event loop lasted longer than 300 ms.
    // Another timed patch or the defaults replace the one pending; any other patch leaves it to end.
    const forMs = patch.forMs;
    if (forMs !== undefined && !(typeof forMs === 'number' && forMs >= 0 && forMs <= MAX_DELAY_MS)) {
      throw new Error(`forMs must be a number of ms from 0 to ${MAX_DELAY_MS}`);
    }
    if (forMs !== undefined && patch.defaults === true) throw new Error('forMs cannot undo defaults');
    if (forMs !== undefined || patch.defaults === true) {
      cancel(cap.revert);
      cap.revert = null;
    }
    cap.cfg = cfg;
    if (forMs !== undefined) {
      const changed = Object.keys(cfg).filter((k) => cfg[k] !== before[k]);
      cap.revert = later(() => {
        cap.revert = null;
        cap.cfg = { ...cap.cfg, ...Object.fromEntries(changed.map((k) => [k, before[k]])) };
        pump();
      }, forMs);
    }
    if (patch.resetCounters === true) resetCapacityCounters();
    pump();
  }

  // ---- control endpoints (/_*): not logged
  function control(ctx) {
    const { pathname, query, req } = ctx;
    const method = req.method;
    switch (pathname) {
      case '/_log': {
        const st = states.get(query.id ?? 'default');
        let log = st ? st.log : [];
        if (query.since !== undefined) {
          const since = Number(query.since);
          log = log.filter((e) => e.seq > since);
        }
        return sendJson(ctx, 200, log);
      }
      case '/_stats': {
        const st = states.get(query.id ?? 'default') ?? newIdState();
        return sendJson(ctx, 200, {
          count: st.count,
          preflights: st.preflights,
          concurrentNow: st.concurrentNow,
          maxConcurrent: st.maxConcurrent,
          logged: st.log.length,
          droppedLogEntries: st.dropped,
        });
      }
      case '/_reset': {
        if (method === 'GET') return sendJson(ctx, 405, { error: 'use POST' });
        if (query.id !== undefined) states.delete(query.id);
        else {
          states.clear();
          cancel(cap.revert);
          cap.revert = null;
          cap.cfg = { ...CAPACITY_DEFAULTS };
          resetCapacityCounters();
        }
        return sendJson(ctx, 200, { ok: true, id: query.id ?? null });
      }
      case '/_executions': {
        const st = states.get(query.id ?? 'default') ?? newIdState();
        return sendJson(ctx, 200, { executions: st.executions, keys: st.idem.size });
      }
      case '/_capacity': {
        if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
          let patch;
          try {
            patch = ctx.body.text.trim() ? JSON.parse(ctx.body.text) : {};
            if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new Error('body must be a JSON object');
            configureCapacity(patch);
          } catch (err) {
            return sendJson(ctx, 400, { error: String(err.message) });
          }
        }
        return sendJson(ctx, 200, capacitySnapshot());
      }
      case '/_config': {
        if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
          try {
            const patch = ctx.body.text.trim() ? JSON.parse(ctx.body.text) : {};
            if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new Error('body must be a JSON object');
            if (patch.close !== undefined) serverCfg.close = Boolean(patch.close);
          } catch (err) {
            return sendJson(ctx, 400, { error: String(err.message) });
          }
        }
        return sendJson(ctx, 200, { ...serverCfg });
      }
      case '/_time':
        return sendJson(ctx, 200, { now: now() });
      case '/_debug':
        return sendJson(ctx, 200, {
          timers: timers.size,
          sockets: sockets.size,
          ids: [...states.keys()],
          capacityQueueArray: cap.q.length - cap.qHead,
        });
    }
    return sendJson(ctx, 404, { error: 'unknown control endpoint', path: pathname });
  }

  // ---- static files
  async function staticOr404(ctx) {
    const { req, pathname } = ctx;
    const notFound = () => sendJson(ctx, 404, { error: 'not found', path: pathname });
    if (!root || (req.method !== 'GET' && req.method !== 'HEAD')) return notFound();
    let rel;
    try {
      rel = decodeURIComponent(pathname);
    } catch {
      return notFound();
    }
    if (rel.includes('\0')) return notFound();
    let file = path.resolve(root, '.' + path.posix.normalize('/' + rel));
    if (file !== root && !file.startsWith(root + path.sep)) return notFound();
    let st;
    try {
      st = await fs.promises.stat(file);
      if (st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = await fs.promises.stat(file);
      }
      if (!st.isFile()) return notFound();
      const real = await fs.promises.realpath(file);
      if (real !== root && !real.startsWith(root + path.sep)) return notFound();
    } catch {
      return notFound();
    }
    if (ctx.closed) return;
    const { res } = ctx;
    res.statusCode = 200;
    res.setHeader('Content-Type', MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream');
    res.setHeader('Content-Length', String(st.size));
    res.setHeader('Cache-Control', staticCacheControl);
    setStatus(ctx, 200);
    if (req.method === 'HEAD') return res.end();
    const stream = fs.createReadStream(file);
    stream.on('error', () => res.destroy());
    ctx.onClose.add(() => stream.destroy());
    stream.pipe(res);
  }

  // ---- servers
  const sockets = new Set();
  const servers = [];
  function makeServer() {
    const server = http.createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
      handle(req, res).catch(() => {
        try {
          res.destroy();
        } catch {}
      });
    });
    server.keepAliveTimeout = 10_000;
    server.headersTimeout = 20_000;
    server.requestTimeout = 120_000;
    server.maxHeadersCount = 500;
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    });
    server.on('clientError', (err, socket) => {
      if (err && (err.code === 'ECONNRESET' || err.code === 'EPIPE') || !socket.writable) {
        socket.destroy();
        return;
      }
      try {
        socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      } catch {
        socket.destroy();
      }
    });
    server.on('error', () => {});
    return server;
  }
  function listen(server, p) {
    return new Promise((resolve, reject) => {
      const onErr = (e) => reject(e);
      server.once('error', onErr);
      server.listen({ port: p, host, backlog: 1024 }, () => {
        server.off('error', onErr);
        resolve(server.address().port);
      });
    });
  }

  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  const ports = [];
  try {
    for (let i = 0; i <= extraPorts; i++) {
      const server = makeServer();
      servers.push(server);
      ports.push(await listen(server, i === 0 ? port : 0));
    }
  } catch (err) {
    for (const s of servers) s.close();
    throw err;
  }
  const urls = ports.map((p) => `http://${hostForUrl}:${p}`);

  let closing = null;
  async function close() {
    if (closing) return closing;
    closing = (async () => {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
      for (const s of sockets) s.destroy();
      for (const h of timers) clearTimeout(h);
      timers.clear();
    })();
    return closing;
  }

  return { url: urls[0], port: ports[0], urls, ports, close, now, timeOrigin: performance.timeOrigin + t0 };
}

// ---- command line
function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = () => (inline !== undefined ? inline : argv[++i]);
    if (flag === '--port') opts.port = Number(val());
    else if (flag === '--static') opts.staticRoot = val();
    else if (flag === '--extra-ports') opts.extraPorts = Number(val());
    else if (flag === '--host') opts.host = val();
    else if (flag === '--close') opts.close = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href ||
      fileURLToPath(import.meta.url) === path.resolve(process.argv[1]);
  } catch {
    return false;
  }
}

if (isMain()) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err.message}\nusage: node server.mjs [--port N] [--static DIR] [--extra-ports K] [--close]\n`);
    process.exit(2);
  }
  process.on('uncaughtException', (err) => process.stderr.write(`fault server: uncaught ${err && err.stack}\n`));
  process.on('unhandledRejection', (err) => process.stderr.write(`fault server: unhandled ${err && err.stack}\n`));
  const srv = await startServer(opts);
  process.stdout.write(JSON.stringify({ url: srv.url, port: srv.port, urls: srv.urls }) + '\n');
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await srv.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
