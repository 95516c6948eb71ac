// stormguard/otel: instrument(client), OpenTelemetry traces and metrics of a
// client's calls from its events and hooks. `@opentelemetry/api` is an
// optional peer dependency (no SDK bundled); nothing of this file enters the
// main entry or the wasm.
//
// The seams it uses, all public: the client's events (every attempt, retry,
// timeout, hold, breaker change, fallback and failure, each with its call's
// requestId), a derived client (`extend`) whose beforeRequest hook injects
// `traceparent` into every attempt and whose afterResponse hook reads its
// status, and the client's own request()/fetch() replaced by the derived
// client's (they are own properties of the client; the undo puts them back).
// schema() stays the client's own: a beforeRequest hook would make it keep
// its last-good copy only under a cacheKey (the README's threat model), so
// its calls are counted in the metrics, not traced, and carry no traceparent.
import { context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

const NAME = 'stormguard';
const EVENTS = ['attempt', 'retry', 'timeout', 'giveUp', 'breaker', 'fallback', 'wait'];
const MAX_OPEN = 1000;
const STATE = { closed: 0, 'half-open': 1, open: 2 };
const setter = { set: (headers, key, value) => headers.set(key, value) };

/** `url` as url.full may carry it: no userinfo, query values replaced by REDACTED. */
export function safeUrl(url) {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    if (u.search) {
      const q = new URLSearchParams(u.search);
      u.search = [...q.keys()].map((k) => `${encodeURIComponent(k)}=REDACTED`).join('&');
    }
    return u.href;
  } catch {
    return undefined;
  }
}

/**
 * `instrument(client, { tracer?, meter? })`: a span per call and a child
 * CLIENT span per attempt (HTTP client semantic conventions), the call's
 * decisions as span events, `traceparent` through the global propagator on
 * every attempt of request() and fetch(), and metrics. Returns the undo.
 */
export function instrument(client, { tracer, meter } = {}) {
  if (!client || typeof client.on !== 'function' || typeof client.extend !== 'function') {
    throw new TypeError('instrument: the first argument is a stormguard client');
  }
  tracer ??= trace.getTracer(NAME);
  meter ??= metrics.getMeter(NAME);

  const attemptsCounter = meter.createCounter('stormguard.attempts', { description: 'requests sent (first attempts, retries and hedges)' });
  const retriesCounter = meter.createCounter('stormguard.retries', { description: 'retries planned' });
  const holdsCounter = meter.createCounter('stormguard.holds', { description: 'calls held before an attempt (Retry-After, quota, pace)' });
  const queueWait = meter.createHistogram('stormguard.queue.wait', { unit: 'ms', description: 'time from a call\'s start to its first attempt (queue, holds, hooks)' });
  const denials = meter.createObservableCounter('stormguard.budget.denials', { description: 'retries not made because the retry budget was spent' });
  const breakerState = meter.createObservableGauge('stormguard.breaker.state', { description: 'each breaker: 0 closed, 1 half-open, 2 open' });
  const queued = meter.createObservableGauge('stormguard.queue.queued', { description: 'calls waiting for a concurrency slot' });
  const inFlight = meter.createObservableGauge('stormguard.in_flight', { description: 'attempts in flight' });
  const observeDenials = (r) => r.observe(client.stats().budgetDenied);
  const observeBreakers = (r) => {
    for (const b of client.breakers()) r.observe(STATE[b.state] ?? 0, { 'stormguard.breaker.key': b.key });
  };
  const observeQueued = (r) => r.observe(client.stats().queued);
  const observeInFlight = (r) => r.observe(client.stats().inFlight);
  const observers = [[denials, observeDenials], [breakerState, observeBreakers], [queued, observeQueued], [inFlight, observeInFlight]];
  for (const [o, f] of observers) o.addCallback(f);

  /** requestId -> { span, method, url, attempts: Map<number, span>, ended } */
  const calls = new Map();

  function callOf(requestId, method, url) {
    let c = calls.get(requestId);
    if (!c) {
      const attributes = { 'http.request.method': method ?? 'GET' };
      const full = url && safeUrl(url);
      if (full) attributes['url.full'] = full;
      c = { span: tracer.startSpan(method ?? 'GET', { kind: SpanKind.INTERNAL, attributes }), method, url, attempts: new Map(), ended: false };
      calls.set(requestId, c);
      // A call whose end no event or answer shows (one that joined an identical GET in flight) is
      // ended, oldest first, rather than kept for ever.
      if (calls.size > MAX_OPEN) {
        const [id, old] = calls.entries().next().value;
        endCall(id, old);
      }
    }
    return c;
  }

  function startAttempt(c, attempt) {
    let span = c.attempts.get(attempt);
    if (span) return span;
    const attributes = { 'http.request.method': c.method ?? 'GET' };
    const full = c.url && safeUrl(c.url);
    if (full) attributes['url.full'] = full;
    if (attempt > 1) attributes['http.request.resend_count'] = attempt - 1;
    span = tracer.startSpan(c.method ?? 'GET', { kind: SpanKind.CLIENT, attributes }, trace.setSpan(context.active(), c.span));
    c.attempts.set(attempt, span);
    return span;
  }

  function endAttempt(c, attempt, { status, error } = {}) {
    const span = c.attempts.get(attempt);
    if (!span || span.__sgEnded) return;
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    const type = error ?? (status >= 400 ? String(status) : undefined);
    if (type) {
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.__sgEnded = true;
    span.end();
  }

  function endCall(requestId, c, error) {
    if (c.ended) return;
    for (const n of c.attempts.keys()) endAttempt(c, n, { error: error ?? 'cancelled' });
    if (error) {
      c.span.setAttribute('error.type', error);
      c.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    c.ended = true;
    c.span.end();
    calls.delete(requestId);
  }

  const onEvent = (e) => {
    if (e.type === 'breaker') {
      const c = e.requestId && calls.get(e.requestId);
      if (c) c.span.addEvent('breaker', { 'stormguard.breaker.key': e.key, 'stormguard.breaker.from': e.from, 'stormguard.breaker.to': e.to });
      return;
    }
    if (e.type === 'attempt') {
      attemptsCounter.add(1, { 'http.request.method': e.method });
      if (e.attempt === 1) queueWait.record(e.elapsedMs ?? 0, { 'http.request.method': e.method });
    }
    if (e.type === 'retry') retriesCounter.add(1, { 'http.request.method': e.method });
    if (e.type === 'wait') holdsCounter.add(1, { 'stormguard.hold.reason': e.reason });
    // Spans for the calls of request() and fetch(), whose attempts the hook saw (schema() and other
    // clients of the engine are counted, not traced).
    const c = e.requestId && calls.get(e.requestId);
    if (!c) return;
    switch (e.type) {
      case 'attempt': {
        // Another attempt while one is still open and no retry was planned: a hedge.
        const open = [...c.attempts].filter(([n, s]) => n !== e.attempt && !s.__sgEnded);
        if (e.attempt > 1 && open.length) c.span.addEvent('hedge', { 'stormguard.attempt': e.attempt });
        startAttempt(c, e.attempt);
        break;
      }
      case 'retry':
        endAttempt(c, e.attempt, { status: e.status, error: e.status === undefined ? e.errorName : undefined });
        c.span.addEvent('retry', {
          'stormguard.attempt': e.attempt, 'stormguard.delay_ms': e.delayMs,
          ...(e.status !== undefined ? { 'http.response.status_code': e.status } : { 'error.type': e.errorName }),
        });
        break;
      case 'timeout':
        endAttempt(c, e.attempt, { error: 'TimeoutError' });
        c.span.addEvent('timeout', { 'stormguard.attempt': e.attempt });
        break;
      case 'wait':
        c.span.addEvent('hold', { 'stormguard.hold.reason': e.reason, 'stormguard.delay_ms': e.delayMs, 'stormguard.breaker.key': e.key });
        break;
      case 'fallback':
        c.span.addEvent('fallback', { 'error.type': e.errorName });
        endCall(e.requestId, c);
        break;
      case 'giveUp':
        if (e.errorName === 'CircuitOpenError') c.span.addEvent('circuit open');
        c.span.addEvent('giveUp', e.status !== undefined ? { 'http.response.status_code': e.status } : { 'error.type': e.errorName });
        // Ended when the call rejects (failed(), below), which tells why it was not retried.
        c.failed = e.status !== undefined ? String(e.status) : e.errorName;
        break;
    }
  };
  const offs = EVENTS.map((t) => client.on(t, onEvent));

  const inner = client.extend({
    hooks: {
      // Before every attempt (before its admission): the attempt's span, and its context as
      // traceparent through the global propagator.
      beforeRequest(request, info) {
        const c = callOf(info.requestId, info.method, info.url);
        if (c.attempts.get(info.attempt)?.__sgEnded) {
          // The same attempt again: the replay after a 401 and a refresh (a span of its own).
          c.span.addEvent('401 replay', { 'stormguard.attempt': info.attempt });
          c.attempts.delete(info.attempt);
        }
        const span = startAttempt(c, info.attempt);
        propagation.inject(trace.setSpan(context.active(), span), request.headers, setter);
      },
      // The answer's headers: the attempt's status. An answer below 400 ends the call as a success
      // (a body that fails to parse later comes as giveUp on no span); others wait for the call's
      // retry or giveUp event, or fetch()'s answer.
      afterResponse(request, response, info) {
        const c = calls.get(info.requestId);
        if (!c) return;
        endAttempt(c, info.attempt, { status: response.status });
        c.span.setAttribute('http.response.status_code', response.status);
        if (response.status < 400) endCall(info.requestId, c);
        else c.answered = { status: response.status, url: info.url };
      },
    },
  });
  // fetch() resolves with a 4xx or 5xx answer as the platform's does, and no event says so: the call
  // it answered is the oldest one answered with that status (and URL) and not ended.
  function fetchAnswered(response) {
    for (const [id, c] of calls) {
      if (c.answered?.status === response.status && (!response.url || c.answered.url === response.url)) {
        endCall(id, c, String(response.status));
        break;
      }
    }
    return response;
  }
  // A call rejects: its span ends, with retryDenied (the error's) as an event.
  function failed(e) {
    const id = typeof e === 'object' && e !== null ? e.requestId : undefined;
    const c = id && calls.get(id);
    if (c) {
      if (e.retryDenied) c.span.addEvent('retryDenied', { 'stormguard.retry_denied': e.retryDenied });
      endCall(id, c, c.failed ?? e.name);
    }
    throw e;
  }
  const wrapped = {
    request: { request: (...args) => inner.request(...args).catch(failed) }.request,
    // The arguments as given (fetch() with none rejects as the platform's does).
    fetch: { fetch: (...args) => inner.fetch(...args).then(fetchAnswered, failed) }.fetch,
  };
  const own = {};
  for (const m of ['request', 'fetch']) {
    own[m] = Object.getOwnPropertyDescriptor(client, m);
    Object.defineProperty(client, m, { value: wrapped[m], writable: true, configurable: true, enumerable: own[m]?.enumerable ?? true });
  }

  let undone = false;
  return function undo() {
    if (undone) return;
    undone = true;
    for (const m of ['request', 'fetch']) {
      if (own[m]) Object.defineProperty(client, m, own[m]);
      else delete client[m];
    }
    for (const off of offs) off();
    for (const [o, f] of observers) o.removeCallback(f);
  };
}
