// Types of stormguard/testing (see README, "Testing an app's resilience: stormguard/testing").

/**
 * One answer of a script:
 * - a status number (an empty body; 200 answers `{}` as JSON);
 * - `'reset'`: the connection is reset (fetch rejects with a TypeError, as Node's does);
 * - `'stall'`: 200 headers, then a body that never ends;
 * - `'hang'`: no answer at all;
 * - `{ delayMs, ...item }`: waits (on the global setTimeout: fake timers move it), then answers as
 *   the rest of the object, or as the fallback when nothing else is given;
 * - `{ status, retryAfter, headers, body, json }` (`retryAfter`: seconds, or an HTTP date);
 * - a Response (a clone of it is answered);
 * - a function of the Request returning any of these.
 * Every wait ends with the request's signal, as fetch's does.
 */
export type FaultyReply =
  | number
  | 'reset'
  | 'stall'
  | 'hang'
  | Response
  | FaultyResponse
  | ((request: Request) => FaultyReply | Promise<FaultyReply>);

export interface FaultyResponse {
  /** Waits this long first, then answers as the rest of the object (or as the fallback). */
  delayMs?: number;
  status?: number;
  statusText?: string;
  /** Sent as `Retry-After`: seconds, or an HTTP date. */
  retryAfter?: number | string;
  headers?: HeadersInit;
  body?: BodyInit | null;
  /** JSON-encoded, with `content-type: application/json`. */
  json?: unknown;
  /** After `delayMs`: answer with this item instead. */
  reply?: FaultyReply;
}

export interface FaultyRule {
  /**
   * Which requests the rule answers: a string contained in the URL (`'*'` or none: every request),
   * a RegExp tested on the URL, or a function of the Request.
   */
  match?: string | RegExp | ((request: Request) => boolean);
  /** One item per matching request, in order; when used up, the next rule that matches (or the fallback) answers. */
  reply: FaultyReply[];
}

export interface FaultyCall {
  method: string;
  url: string;
  /** A copy of the request's headers (Idempotency-Key, Authorization, traceparent...). */
  headers: Headers;
  request: Request;
  /** The script's item that answered, or 'fallback'. */
  reply: FaultyReply | 'fallback';
}

export interface FaultyFetch {
  (input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Every request, in the order they came. */
  readonly calls: FaultyCall[];
}

/**
 * A fetch for the client's `fetch` option, answering each request from the first rule of `script`
 * whose `match` takes it and whose replies are not used up, then from `fallback` (any reply item,
 * or a function such as `(request) => fetch(request)` for the real answer), else 200 with `{}`.
 */
export function faultyFetch(script?: FaultyRule | FaultyRule[], fallback?: FaultyReply): FaultyFetch;
