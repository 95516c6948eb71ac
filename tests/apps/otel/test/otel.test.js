// stormguard/otel with the OpenTelemetry SDK's in-memory exporters, in Node
// against the fault server (STORMGUARD_FAULT_URL): the spans and metrics of a
// call retried twice, a hedged call, and a call refused by an open breaker;
// traceparent on every attempt, through the global propagator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { createClient } from 'stormguard';
import { instrument } from 'stormguard/otel';

const FAULT = process.env.STORMGUARD_FAULT_URL;
assert.ok(FAULT, 'STORMGUARD_FAULT_URL is set');
const RUN = Date.now().toString(36);

propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

/** A client, instrumented, whose transport records each attempt's traceparent. */
async function setup(options) {
  const reader = new Reader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
  const sent = [];
  const client = await createClient({
    crossTab: false,
    budget: false,
    fetch: (request) => {
      sent.push(request.headers.get('traceparent'));
      return fetch(request);
    },
    ...options,
  });
  const undo = instrument(client, { tracer, meter });
  /** Each metric by name: its data points as [attributes, value]. */
  const metrics = async () => {
    const { resourceMetrics } = await reader.collect();
    const out = {};
    for (const s of resourceMetrics.scopeMetrics) {
      for (const m of s.metrics) out[m.descriptor.name] = m.dataPoints.map((p) => [p.attributes, p.value]);
    }
    return out;
  };
  return { client, sent, undo, metrics };
}

/** The spans of one trace: the call's (INTERNAL) and its attempts' (CLIENT), in start order. */
function traceOf(callSpan) {
  const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === callSpan.spanContext().traceId);
  const byStart = (a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]);
  return { call: callSpan, attempts: spans.filter((s) => s.kind === SpanKind.CLIENT).sort(byStart) };
}
const callSpans = () => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.INTERNAL);
const total = (points) => points.reduce((n, [, v]) => n + (typeof v === 'number' ? v : v.sum), 0);

test('a call retried twice: one call span, three attempt spans with resend counts, traceparent on each', async () => {
  exporter.reset();
  const { client, sent, undo, metrics } = await setup({ retry: { baseDelayMs: 5, jitter: 'none' } });
  const url = `${FAULT}/fail-first?n=2&id=otel-retry-${RUN}&secret=s3cr3t`;
  assert.equal((await client.request(url)).attempt, 3);
  const [call] = callSpans();
  const { attempts } = traceOf(call);
  assert.equal(call.name, 'GET');
  assert.equal(call.attributes['http.request.method'], 'GET');
  assert.equal(call.attributes['url.full'], `${FAULT}/fail-first?n=REDACTED&id=REDACTED&secret=REDACTED`);
  assert.equal(call.attributes['http.response.status_code'], 200);
  assert.equal(call.status.code, SpanStatusCode.UNSET);
  assert.deepEqual(call.events.map((e) => e.name), ['retry', 'retry']);
  assert.deepEqual(call.events.map((e) => e.attributes['http.response.status_code']), [503, 503]);
  assert.deepEqual(attempts.map((s) => s.attributes['http.response.status_code']), [503, 503, 200]);
  assert.deepEqual(attempts.map((s) => s.attributes['http.request.resend_count']), [undefined, 1, 2]);
  assert.deepEqual(attempts.map((s) => s.attributes['error.type']), ['503', '503', undefined]);
  for (const s of attempts) assert.equal(s.parentSpanContext?.spanId ?? s.parentSpanId, call.spanContext().spanId);
  // traceparent: the call's trace, each attempt's own span.
  assert.deepEqual(sent, attempts.map((s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`));
  const m = await metrics();
  assert.equal(total(m['stormguard.attempts']), 3);
  assert.equal(total(m['stormguard.retries']), 2);
  assert.equal(total(m['stormguard.budget.denials']), 0);
  assert.equal(m['stormguard.queue.wait'][0][1].count, 1);
  undo();
  client.close();
});

test('a hedged call: a hedge event and two attempt spans, the second a resend', async () => {
  exporter.reset();
  const { client, sent, undo } = await setup({ hedge: { afterMs: 100 }, retry: { baseDelayMs: 5 } });
  const body = await client.request(`${FAULT}/slow-first?n=1&ms=3000&id=otel-hedge-${RUN}`);
  assert.equal(body.slow, false, 'the hedge answered first');
  const [call] = callSpans();
  const { attempts } = traceOf(call);
  assert.ok(call.events.some((e) => e.name === 'hedge'), `events: ${call.events.map((e) => e.name)}`);
  assert.equal(attempts.length, 2);
  assert.deepEqual(attempts.map((s) => s.attributes['http.request.resend_count']), [undefined, 1]);
  assert.equal(attempts[1].attributes['http.response.status_code'], 200);
  assert.equal(attempts[0].attributes['error.type'], 'cancelled', 'the slow first attempt was abandoned');
  assert.equal(sent.length, 2);
  undo();
  client.close();
});

test('a call refused by an open breaker: a circuit open event, error.type CircuitOpenError, the breaker state metric', async () => {
  exporter.reset();
  const { client, undo, metrics } = await setup({ retry: false, breaker: { consecutiveFailures: 2 } });
  const url = `${FAULT}/status/503?id=otel-open-${RUN}`;
  for (let i = 0; i < 2; i++) await assert.rejects(client.request(url), { name: 'HttpError' });
  await assert.rejects(client.request(url), { name: 'CircuitOpenError' });
  const calls = callSpans();
  assert.equal(calls.length, 3);
  assert.deepEqual(calls.map((s) => s.attributes['error.type']), ['503', '503', 'CircuitOpenError']);
  assert.ok(calls.every((s) => s.status.code === SpanStatusCode.ERROR));
  assert.deepEqual(calls[0].events.map((e) => [e.name, e.attributes['stormguard.retry_denied']]), [['giveUp', undefined], ['retryDenied', 'attempts']],
    'retry: false is one attempt in all: retryDenied attempts');
  assert.deepEqual(calls[2].events.map((e) => e.name), ['circuit open', 'giveUp']);
  const refused = traceOf(calls[2]).attempts;
  assert.ok(refused.every((s) => s.attributes['http.response.status_code'] === undefined), 'nothing answered the refused call');
  const m = await metrics();
  assert.deepEqual(m['stormguard.breaker.state'], [[{ 'stormguard.breaker.key': `GET ${FAULT}/status/503` }, 2]]);
  assert.equal(total(m['stormguard.attempts']), 2);
  undo();
  client.close();
});

test('the undo puts request() and fetch() back: no more spans or traceparent', async () => {
  exporter.reset();
  const { client, sent, undo } = await setup({ retry: false });
  undo();
  await client.request(`${FAULT}/json?body=${encodeURIComponent('{"ok":true}')}`);
  assert.equal(exporter.getFinishedSpans().length, 0);
  assert.deepEqual(sent, [null]);
  client.close();
});

test('fetch(): a call answered 404 ends with error.type 404; identical GETs in flight still share one request', async () => {
  exporter.reset();
  const { client, sent, undo } = await setup({ retry: false });
  const res = await client.fetch(`${FAULT}/status/404?id=otel-fetch-${RUN}`);
  assert.equal(res.status, 404);
  const [call] = callSpans();
  assert.equal(call.attributes['error.type'], '404');
  assert.equal(traceOf(call).attempts[0].attributes['http.response.status_code'], 404);
  const url = `${FAULT}/delay?ms=100&id=otel-dedupe-${RUN}`;
  await Promise.all([client.request(url), client.request(url)]);
  assert.equal(client.stats().deduped, 1);
  assert.equal(sent.length, 2, 'one request for the two identical GETs');
  undo();
  client.close();
});

test('with no tracer or meter given, the global providers are used: calls work the same', async () => {
  const client = await createClient({ crossTab: false, retry: { baseDelayMs: 5 } });
  const undo = instrument(client);
  assert.equal((await client.request(`${FAULT}/fail-first?n=1&id=otel-global-${RUN}`)).attempt, 2);
  assert.equal((await client.fetch(`${FAULT}/status/404?id=otel-global-${RUN}`)).status, 404);
  undo();
  client.close();
});
