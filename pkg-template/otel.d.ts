// Types of stormguard/otel (see README, "OpenTelemetry: stormguard/otel").
import type { Meter, Tracer } from '@opentelemetry/api';
import type { Client } from './index.js';

export interface InstrumentOptions {
  /** Default: `trace.getTracer('stormguard')` (the global tracer provider). */
  tracer?: Tracer;
  /** Default: `metrics.getMeter('stormguard')` (the global meter provider). */
  meter?: Meter;
}

/**
 * Traces and metrics of the client's calls: a span per call of request() and fetch() and a child
 * CLIENT span per attempt (HTTP client semantic conventions: `http.request.method`, `url.full` without
 * userinfo or query values, `http.response.status_code`, `http.request.resend_count` on retries,
 * `error.type`), its decisions as span events (`retry`, `retryDenied`, `hedge`, `hold`, `timeout`,
 * `circuit open`, `401 replay`, `fallback`, `giveUp`), `traceparent` through the global propagator on every attempt, and the
 * metrics `stormguard.attempts`, `stormguard.retries`, `stormguard.budget.denials`,
 * `stormguard.breaker.state` (per key), `stormguard.holds`, `stormguard.queue.wait`,
 * `stormguard.queue.queued`, `stormguard.in_flight`. Returns the function that undoes it.
 */
export function instrument(client: Client, options?: InstrumentOptions): () => void;

/** `url` as `url.full` carries it: no userinfo, each query value `REDACTED`; undefined if it is no URL. */
export function safeUrl(url: string): string | undefined;
