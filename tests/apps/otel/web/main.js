// stormguard/otel in a page (the web side of "works in the browser and in
// Node"): bundled with esbuild, @opentelemetry/api 1.9 and sdk-trace-base
// 2.12's in-memory exporter, the W3C propagator from @opentelemetry/core.
// Driven by tests/e2e/apps.test.mjs: window.call(url) makes one instrumented
// request() and hands back the spans of its trace as plain data.
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createClient } from 'stormguard';
import { instrument } from 'stormguard/otel';
import wasmUrl from 'stormguard/stormguard_bg.wasm';

propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const exporter = new InMemorySpanExporter();
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('web');

const api = await createClient({ wasm: wasmUrl, crossTab: false, budget: false, retry: { baseDelayMs: 5, jitter: 'none' } });
instrument(api, { tracer });

const plain = (s) => ({
  name: s.name,
  kind: s.kind,
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parentSpanId: s.parentSpanContext?.spanId ?? s.parentSpanId,
  start: s.startTime[0] * 1e9 + s.startTime[1],
  attributes: s.attributes,
  events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
  status: s.status.code,
});

window.call = async (url) => {
  exporter.reset();
  let result;
  try {
    result = { ok: true, body: await api.request(url) };
  } catch (e) {
    result = { ok: false, name: e.name, status: e.status };
  }
  return { ...result, spans: exporter.getFinishedSpans().map(plain) };
};
window.ready = true;
