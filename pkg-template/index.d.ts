// Types of the stormguard package, as the README ("Client methods", "Options", "Errors", "Stats and events") documents them.

export type Jitter = 'full' | 'equal' | 'decorrelated' | 'none';

export interface RetryOptions {
  /** Attempts in all, first included; default 3; 1 = never retry. */
  maxAttempts?: number;
  /** Backoff before retry n: min(maxDelayMs, baseDelayMs * 2^(n-1)); default 1000. */
  baseDelayMs?: number;
  /** Default 8000. */
  maxDelayMs?: number;
  /** Default 'full'. */
  jitter?: Jitter;
  /** Default [408, 429, 500, 502, 503, 504]. */
  statuses?: number[];
  /** Default ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']. */
  methods?: string[];
  /** Honour Retry-After on 429/503; default true. */
  retryAfter?: boolean;
  /**
   * A longer Retry-After gives up at once. The client's value is also the
   * longest a Retry-After or a spent quota holds its other calls (a call's
   * own value never lengthens that). Default 30000.
   */
  maxRetryAfterMs?: number;
  /**
   * Asked after each failed attempt a retry could follow (ky's shouldRetry):
   * true retries although the status or error class would not be (never a
   * method that is neither idempotent nor keyed, never past maxAttempts, the
   * budget or the deadline); false: no retry (`retryDenied: 'predicate'`);
   * undefined: the policy decides. A throw ends the call with
   * OptionsError('retry.retryOn'). A call's own wins over the client's.
   */
  retryOn?: (info: AttemptInfo & { error: StormguardError }) => boolean | undefined | Promise<boolean | undefined>;
}

/** Retries in any window <= minRetries + ratio * calls in that window. */
export interface BudgetOptions {
  /** Default 0.1. */
  ratio?: number;
  /** Default 3. */
  minRetries?: number;
  /** Default 10000. */
  windowMs?: number;
}

/** One breaker per key; default key: `${METHOD} ${origin}${pathname}`. */
export interface BreakerOptions {
  /** Sliding window; default 60000. */
  windowMs?: number;
  /** Default 10. */
  minSamples?: number;
  /** Opens when failures/samples > failureRate; default 0.5. */
  failureRate?: number;
  /**
   * Also opens after this many failures in a row; default 3 in a page, false on a server (no `window`); false: off
   * (the failure rate alone). Counted per
   * origin too: when this many failures in a row (no success between) span two or more endpoints of one origin
   * (default keys) failing together (each sent before another's failure came back), every endpoint that failed in
   * the run opens, and they probe one at a time until the origin answers well again (a page load's burst in an
   * outage sends no retries; endpoints called one after another keep their own counts).
   */
  consecutiveFailures?: number | false;
  /** First open period; default 2000. */
  openMs?: number;
  /**
   * Each failed half-open probe doubles the open period, up to this; default 2000 (a constant 2 s:
   * through an outage at most one attempt per 2 s per endpoint, back within about 2 s of the
   * backend). A larger value trades that recovery for a quieter long outage. When unset:
   * max(2000, openMs).
   */
  maxOpenMs?: number;
  /**
   * Concurrent probe calls allowed when half-open; default 1. While they are out, the other calls
   * to the key wait for their outcome (within their deadline, abortable, in order): after a success
   * they go, after a failure they reject with CircuitOpenError without sending.
   */
  halfOpenProbes?: number;
  /**
   * 'binary' (default): the open / half-open / closed circuit above.
   * 'adaptive': client-side throttling (Google SRE book): each call is
   * rejected locally (CircuitOpenError, retryInMs 0) with probability
   * max(0, (requests - k * accepts) / (requests + 1)) over `windowMs`, once
   * `minSamples` requests are in the window; the other fields are unused.
   */
  mode?: 'binary' | 'adaptive';
  /** Adaptive mode's multiplier, 1..100; default 2. */
  k?: number;
}

export interface ConcurrencyOptions {
  /** Attempts in flight per client; default 6 in a page, 256 where there is no `window` (a server). */
  max?: number;
  /** Calls that may wait for a slot; default 100 in a page, 10000 on a server; 0 = no waiting. */
  queue?: number;
}

export interface StorageOptions {
  /** Default 'stormguard:'. */
  prefix?: string;
  /** Default 262144. */
  maxEntryBytes?: number;
}

/**
 * Header fields: a record, a `Headers`, a `Map` or `[name, value]` pairs.
 * A record's `undefined` value is skipped (as ky and axios skip it); in a
 * call's headers it removes the client's header of that name.
 * (No DOM lib needed: `Headers` comes from the DOM or from @types/node.)
 */
export type HeadersLike = Record<string, string | undefined> | Headers | Iterable<readonly [string, string]>;

/**
 * Query fields: a record, a `URLSearchParams`, a `Map` or `[name, value]`
 * pairs. A record's `undefined` value is skipped (as ky and axios skip it).
 */
export type QueryLike =
  | Record<string, string | number | boolean | undefined>
  | URLSearchParams
  | Iterable<readonly [string, string | number | boolean]>;

/**
 * The Standard Schema interface (v1), which zod, valibot, arktype and others
 * implement: `validate` takes any of them, with no dependency on one.
 * Declared here as the specification publishes it.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }
  type Result<Output> = SuccessResult<Output> | FailureResult;
  interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  interface PathSegment {
    readonly key: PropertyKey;
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['input'];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}

/**
 * `validate`: a predicate (false or a throw rejects the value; it must be
 * synchronous) or a Standard Schema (sync or async; the call resolves with
 * its output). A value that fails rejects `request()` with a ParseError
 * (`issues`: the schema's, at most 20), never retried and never a breaker
 * failure (the server answered).
 */
export type Validate = ((value: unknown) => boolean) | StandardSchemaV1;

/**
 * `Options` whose `validate` is `V` (a schema the call's type is inferred
 * from). Not `Options & { validate: V }`: the intersection of a class such
 * as zod's with `Validate` is no longer a type its instances satisfy
 * (`deepPartial(): DeepPartial<this>`), so a zod schema fell through to the
 * untyped overload and the result was `unknown`.
 */
export type ValidatedBy<Options, V> = Omit<Options, 'validate'> & { validate: V };

/**
 * Where the wasm module comes from: a URL (a string resolves against the
 * page's base URL; in Node a string without a scheme is a file path), a
 * fetched Response, its bytes, or a compiled WebAssembly.Module.
 */
export type WasmSource = string | URL | Response | ArrayBuffer | ArrayBufferView | WasmModule;

/**
 * `WebAssembly.Module` where the project's libs declare it (the DOM and
 * WebWorker libs do; @types/node alone does not, and naming it there would be
 * TS2503). `& object`: the lib's Module is an empty interface a number matches.
 */
export type WasmModule = typeof globalThis extends { WebAssembly: { Module: { prototype: infer M } } }
  ? M & object
  : never;

/**
 * The fields of RequestInit that are not body, method, headers or signal:
 * accepted by createClient (the default of every call), request(), schema()
 * and fetch(), and sent on every attempt exactly as fetch sends them (from
 * the call, else the client's default, else fetch's own default). Validity
 * is the Request constructor's: a value it refuses rejects request() and
 * schema() with an OptionsError naming the field (createClient too, for a
 * default), and fetch() with the constructor's TypeError.
 */
export interface FetchInit {
  // The DOM lib's unions spelled out: a Node project without the DOM lib
  // (only @types/node) has no RequestCredentials, RequestMode, ... types.
  credentials?: 'omit' | 'same-origin' | 'include';
  mode?: 'cors' | 'navigate' | 'no-cors' | 'same-origin';
  cache?: 'default' | 'force-cache' | 'no-cache' | 'no-store' | 'only-if-cached' | 'reload';
  redirect?: 'error' | 'follow' | 'manual';
  referrer?: string;
  referrerPolicy?:
    | '' | 'no-referrer' | 'no-referrer-when-downgrade' | 'origin' | 'origin-when-cross-origin'
    | 'same-origin' | 'strict-origin' | 'strict-origin-when-cross-origin' | 'unsafe-url';
  integrity?: string;
  keepalive?: boolean;
  priority?: 'high' | 'low' | 'auto';
}

export interface ClientOptions extends FetchInit {
  /**
   * A relative URL is joined under its path, as axios joins: `'https://api.example.com/v1'` (with or
   * without the trailing slash) and `'/users/42'` or `'users/42'` give `https://api.example.com/v1/users/42`;
   * `..` may not climb above its path (OptionsError 'url'); a URL with a scheme is used as given.
   * Without it, relative URLs resolve against location.href.
   */
  baseUrl?: string;
  /**
   * Sent with every call. A function (sync or async) is called before every
   * attempt, so a retry carries what it gives then; it does not split
   * dedupe identity (only a call's own headers do), a call's own headers win
   * over it, and if it throws or rejects the call ends with an OptionsError
   * (`option: 'headers'`, `cause` what it threw) and nothing is sent.
   */
  headers?: HeadersLike | (() => HeadersLike | Promise<HeadersLike>);
  /** A token read before every attempt, and its refresh on a 401. */
  auth?: AuthOptions;
  /** Functions run at fixed points of every call (ky's names and order). */
  hooks?: Hooks;
  /** Per attempt; default 6000. */
  timeoutMs?: number;
  /** If set and timeoutMs is not: timeoutMs = ceil(1.2 * gatewayTimeoutMs). */
  gatewayTimeoutMs?: number;
  /** Whole call: queue wait + every attempt + every backoff; default 20000. */
  deadlineMs?: number;
  retry?: false | RetryOptions;
  budget?: false | BudgetOptions;
  breaker?: false | BreakerOptions;
  concurrency?: false | ConcurrencyOptions;
  /** Identical concurrent GETs share one network call; default true. */
  dedupe?: boolean;
  /**
   * While navigator.onLine is false no attempt is spent: wait for the
   * 'online' event within the deadline (true, default), or fail at once with
   * a NetworkError whose `offline` is true (false). Failures while offline
   * are never breaker failures.
   */
  waitForOnline?: boolean;
  /**
   * Share breaker transitions, Retry-After cooldowns and spent rate-limit quotas with the other tabs
   * of this origin and storage prefix over BroadcastChannel, and let only
   * one tab send a half-open probe (Web Locks, else a LocalStorage lease): the other tabs' calls
   * to that key wait for its outcome, within their deadline.
   * Clients in one page do not share (they model separate browsers).
   * Default true where BroadcastChannel exists.
   */
  crossTab?: boolean;
  /**
   * Obey the quota a server announces (IETF `RateLimit` / `RateLimit-Policy`,
   * `RateLimit-*`, `X-RateLimit-*`, `X-Rate-Limit-*`): when none remains, later
   * calls to the same breaker key sent with the same credentials
   * (`Authorization`, `Cookie`, `Proxy-Authorization`, `X-API-Key`, as sent:
   * `auth.token` and a `headers` function included) wait for
   * the reset, as for a Retry-After (or, if it outlasts their
   * deadline, fail at once with CircuitOpenError and its `retryInMs`); when
   * little remains, calls are spaced over the rest of the window. Waits are
   * capped at `retry.maxRetryAfterMs`, shared with other tabs like Retry-After,
   * and reported as 'wait' events. Default true.
   */
  rateLimit?: boolean;
  storage?: false | StorageOptions;
  /** Hedged requests for slow answers; default false (off). */
  hedge?: false | HedgeOptions;
  /**
   * Where to load the wasm module from, for bundlers that do not resolve
   * `new URL('./stormguard_bg.wasm', import.meta.url)` (esbuild), CDNs and
   * CSP-strict pages. Default: the file beside the package's entry. The
   * first createClient in a realm loads the module; a later, different
   * value is ignored. A file that is not the module, or a value that cannot
   * be read, rejects with an OptionsError (`option: 'wasm'`) naming what was
   * requested; so does a load that has not finished within the client's
   * `deadlineMs`, and a later createClient loads again.
   */
  wasm?: WasmSource;
  /**
   * The transport: called for every attempt with one Request (as ky calls
   * its fetch). Default: the global fetch as it is at that attempt (so a
   * test's mock installed later is used). A client installed as the global
   * fetch never sends through itself: its attempts go to the global fetch
   * as it was when the client was created.
   */
  fetch?: (input: Request) => Promise<Response>;
}

/**
 * `auth`: `Authorization: <scheme> <token>` on every attempt, the token read
 * just before it (inside the call's deadline and the attempt's time). A
 * call's own `Authorization` header wins. If `token` throws, rejects or
 * gives something other than a string, null or undefined, the call ends with
 * an OptionsError (`option: 'auth'`, `cause` what it threw) and nothing is
 * sent (no breaker sample).
 *
 * On a 401 to an attempt that carried the token, `refresh()` runs and the
 * call is sent once more with the token read again. Concurrent 401s of the
 * client and of the clients derived from it (`extend`, unless they give an
 * `auth` of their own) share one refresh, and a 401 to an attempt whose token
 * was read before the last refresh finished is sent again at once, without
 * another refresh. The replay is no retry (no budget, no `maxAttempts`), no
 * breaker sample, keeps the call's idempotency key and is made for every
 * method (a 401 means the server did not act). A second 401, or a refresh
 * that throws, ends the call with the HttpError 401 (`cause` the refresh's
 * error, if any); `fetch()` resolves with the 401 Response.
 */
export interface AuthOptions {
  /** Read before every attempt; nothing is sent for null or undefined. */
  token: () => string | null | undefined | Promise<string | null | undefined>;
  /** Default 'Bearer'; '' sends the token alone. */
  scheme?: string;
  /** Called once on a 401 (shared by the calls that meet one meanwhile). */
  refresh?: () => unknown;
  /**
   * Origins the token may go to besides `baseUrl`'s (else the page's), as
   * `'https://api.example.com'`; `'*'` for every origin, on purpose. A request
   * to any other origin goes without the token and is never refreshed. In
   * Node, without `baseUrl` or `origins`, `createClient` rejects with
   * `OptionsError('auth')`.
   */
  origins?: readonly string[];
}

/** What a hook is told of the attempt it runs for. */
export interface AttemptInfo {
  requestId: string;
  /** 1 for the first attempt (hedges and a 401's replay count too). */
  attempt: number;
  method: string;
  url: string;
}

/** One hook, or several run in order. */
export type OneOrMore<F> = F | F[];

/**
 * `hooks`, with ky's names and order. A derived client's (`extend`) run
 * after its parent's. Hooks never bypass a protection: they run inside the
 * deadline and the attempt's concurrency slot (`beforeRequest` before the
 * attempt's `timeoutMs` starts, which is when its request goes out;
 * `afterResponse` within it), an abort ends the wait for any of them, and a hook that
 * throws or rejects ends the call with an OptionsError (`option: 'hooks'`,
 * `cause` what it threw), which is no breaker sample and is not retried.
 */
export interface Hooks {
  /**
   * Before every attempt: change `request.headers` in place, or return a
   * Request to send instead (it must keep the URL's origin and the method,
   * else OptionsError).
   */
  beforeRequest?: OneOrMore<(request: Request, info: AttemptInfo) => Request | void | Promise<Request | void>>;
  /**
   * When an attempt's response headers arrive, with a clone of the response
   * (as ky's: reading it leaves the call's own body): return a Response to
   * use instead (classification uses it).
   */
  afterResponse?: OneOrMore<
    (request: Request, response: Response, info: AttemptInfo) => Response | void | Promise<Response | void>
  >;
  /**
   * Before the backoff of each retry the policy allows: `false` stops
   * retrying (the call fails with its last error, `retryDenied: 'hook'`). It
   * can never add a retry.
   */
  beforeRetry?: OneOrMore<
    (info: AttemptInfo & { error: AnyStormguardError; delayMs: number }) => boolean | void | Promise<boolean | void>
  >;
  /**
   * The error a `request()` rejects with: return it or another
   * StormguardError (anything else: OptionsError). Awaited within the call's
   * deadline; past it, the call rejects with its own error. `fetch()`
   * rejects as the host's fetch does: the hooks get its rejection's `cause`,
   * and what they return becomes that `cause` (a caller's abort reason is
   * left as it is). `schema()` resolves and runs none.
   */
  beforeError?: OneOrMore<(error: AnyStormguardError) => StormguardError | Promise<StormguardError>>;
}

/**
 * Hedged requests: when an attempt of an idempotent call (a method in
 * `retry.methods`, or an idempotency key) has not answered after `afterMs`,
 * a second attempt goes out and the first good answer wins; the other is
 * aborted. A hedge is an attempt toward `retry.maxAttempts` (3 attempts in
 * all means 3, hedges included) and a retry for the budget (denied when it
 * is spent), counts in `attempts`, needs a free concurrency slot (it never
 * queues) and a closed breaker. A hedge answered 429/503 with Retry-After
 * or a rate-limit reset stops further hedges and holds every call of the key.
 */
export interface HedgeOptions {
  /** Milliseconds, or 'p95': the endpoint's observed 95th percentile answer time (no hedge until 20 answers are seen). */
  afterMs: number | 'p95';
  /** Hedges per call, over all its retries; integer 1..9, default 1. */
  max?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  deadlineMs?: number;
  /** Merged over the client's. */
  retry?: false | RetryOptions;
  /** true: a random UUID v4; sent as Idempotency-Key, the same on every attempt. */
  idempotencyKey?: string | true;
  /** Default `${METHOD} ${origin}${pathname}`; one over 2048 characters is kept as its first 64 characters, `…sha256:` and its SHA-256. */
  breakerKey?: string;
  /** Overrides the client's waitForOnline for this call. */
  waitForOnline?: boolean;
  /** Overrides the client's hedge for this call (fields over the client's). */
  hedge?: false | HedgeOptions;
  /** Overrides the client's rateLimit for this call. */
  rateLimit?: boolean;
}

export type ResponseType = 'json' | 'text' | 'bytes' | 'response';

export interface RequestOptions extends CallOptions, FetchInit {
  /** Default 'GET'. */
  method?: string;
  /** Merged over the client's. */
  headers?: HeadersLike;
  /** Set on the URL's query: added, or replacing a value the URL already gives that name. */
  query?: QueryLike;
  /**
   * What fetch takes as a body (string, Blob, ArrayBuffer, typed array,
   * FormData, URLSearchParams, ReadableStream), or a plain object/array:
   * JSON-encoded with content-type application/json.
   */
  body?: string | object;
  /** Default 'json'. */
  responseType?: ResponseType;
  /** Checks the parsed body before the call resolves with it (see `Validate`). */
  validate?: Validate;
}

/**
 * `schema()`'s options: `request()`'s plus the last-good copy's.
 *
 * A good response is stored in LocalStorage under `storage.prefix + cacheKey`
 * as `{ v: version, t: savedAtEpochMs, data }` when that JSON takes at most
 * `storage.maxEntryBytes` bytes in UTF-8. In Node, in a worker, where storage
 * access throws, or with `storage: false`, the copy is kept in memory for the
 * client's life (at most 32 copies, of any size).
 *
 * A call that sends credentials (an `Authorization`, `Cookie`,
 * `Proxy-Authorization` or `X-API-Key` header, the client's or the call's)
 * is neither stored nor served from the cache unless `cacheKey` is given
 * explicitly: keyed by URL alone, one user's document could be shown to the
 * next user of the browser, or of a server sharing one client. Likewise a
 * call other than GET or HEAD (a POST's body is not in the URL) is cached
 * only under an explicit `cacheKey`.
 */
export interface SchemaOptions<T> extends RequestOptions {
  /**
   * Default: the absolute URL (query included), followed by the call's own
   * headers (one `\nname:value` line each, names lower-cased, in the order
   * given), so calls that differ in a header never share a copy. One over
   * 2048 characters is stored under its first 64 characters and SHA-256.
   */
  cacheKey?: string;
  /** A cached copy saved with another version (or without one) is ignored. */
  version?: string | number;
  /** The oldest cached copy that may be served; default no limit. */
  maxAgeMs?: number;
  /** Served when there is neither a network copy nor a cached one. */
  fallback?: T;
  /**
   * A predicate or a Standard Schema (see `Validate`). A response that fails
   * it is not cached and the result's `error` is a ParseError; it is not a
   * breaker failure. A cached copy is checked with it too before it is
   * served (one that fails is not served). `data` is the schema's output;
   * the copy stored is the response as it came.
   */
  validate?: Validate;
  /** Default 'json'; a stored copy must be JSON or text. */
  responseType?: 'json' | 'text';
}

export interface SchemaResult<T> {
  data: T | undefined;
  source: 'network' | 'cache' | 'fallback' | 'none';
  /** True unless source is 'network'. */
  stale: boolean;
  /** Age of the cached copy served (source 'cache'). */
  ageMs?: number;
  /** Why the network copy was not used (absent when source is 'network'); narrows by `code`. */
  error?: AnyStormguardError;
}

export interface Stats {
  requests: number;
  attempts: number;
  retries: number;
  timeouts: number;
  failures: number;
  breakerOpens: number;
  budgetDenied: number;
  queueRejected: number;
  deduped: number;
  /** schema() results whose source is 'cache' or 'fallback'. */
  fallbacks: number;
  inFlight: number;
  queued: number;
  /** attempts / requests (network attempts per logical call); 0 before any call. */
  amplification: number;
}

export interface BreakerSnapshot {
  key: string;
  state: 'closed' | 'open' | 'half-open';
  samples: number;
  failureRate: number;
  openForMs: number;
}

export type EventName = 'attempt' | 'retry' | 'timeout' | 'giveUp' | 'breaker' | 'fallback' | 'storage' | 'wait';

export interface StormguardEvent {
  type: EventName;
  requestId: string;
  method?: string;
  url?: string;
  attempt?: number;
  elapsedMs?: number;
  remainingMs?: number;
  status?: number;
  errorName?: string;
  /** 'retry': the backoff chosen; 'wait': how long the call waits before its attempt. */
  delayMs?: number;
  key?: string;
  from?: string;
  to?: string;
  /**
   * 'storage': what failed ('access', 'read', 'corrupt', 'write', 'serialize',
   * 'tooLarge'); `errorName` is then what the host threw, if it threw
   * ('SecurityError', 'QuotaExceededError', 'SyntaxError').
   * 'wait': why the call waits for its key: 'retryAfter' (a Retry-After, or a
   * refusal's rate-limit reset), 'quota' (none remains until the reset),
   * 'pace' (little remains: calls are spaced), 'crossTab' (another tab was
   * told to wait).
   */
  reason?: string;
}

export interface Client {
  /** With a Standard Schema: resolves with its output, typed as it infers. */
  request<S extends StandardSchemaV1>(
    url: string | URL,
    options: ValidatedBy<RequestOptions, S>,
  ): Promise<StandardSchemaV1.InferOutput<S>>;
  /** With a type guard: resolves with what it guards. */
  request<T>(url: string | URL, options: RequestOptions & { validate: (value: unknown) => value is T }): Promise<T>;
  /** `responseType: 'response'`: the Response itself (its body unread: yours to read). */
  request(url: string | URL, options: RequestOptions & { responseType: 'response' }): Promise<Response>;
  /** `responseType: 'text'`: the body as a string. */
  request(url: string | URL, options: RequestOptions & { responseType: 'text' }): Promise<string>;
  /** `responseType: 'bytes'`: the body's bytes. */
  request(url: string | URL, options: RequestOptions & { responseType: 'bytes' }): Promise<Uint8Array>;
  /** `responseType: 'json'` (the default): the parsed body, typed as the caller names it. */
  request<T = unknown>(url: string | URL, options?: RequestOptions): Promise<T>;
  /**
   * `init` is a RequestInit (its `signal` may be null, as fetch takes it) with stormguard's call
   * options: `client.fetch` is assignable to `typeof fetch` (`globalThis.fetch = client.fetch`).
   */
  fetch(input: string | URL | Request, init?: RequestInit & Omit<CallOptions, 'signal'>): Promise<Response>;
  /**
   * request() plus a last-good copy. Never rejects for network, HTTP,
   * breaker, budget, queue or storage faults (it resolves with the cache,
   * the fallback or nothing, and `error`); rejects with AbortError when the
   * call is aborted, and with OptionsError for invalid options.
   */
  schema<S extends StandardSchemaV1>(
    url: string | URL,
    options: ValidatedBy<SchemaOptions<StandardSchemaV1.InferOutput<S>>, S>,
  ): Promise<SchemaResult<StandardSchemaV1.InferOutput<S>>>;
  schema<T>(
    url: string | URL,
    options: SchemaOptions<T> & { validate: (value: unknown) => value is T },
  ): Promise<SchemaResult<T>>;
  schema<T = unknown>(url: string | URL, options?: SchemaOptions<T>): Promise<SchemaResult<T>>;
  stats(): Stats;
  breakers(): BreakerSnapshot[];
  /** Returns the unsubscribe function. */
  on(event: EventName, listener: (e: StormguardEvent) => void): () => void;
  /**
   * Aborts in-flight calls, rejects queued ones, frees wasm memory; later
   * calls reject. A derived client's ends its own calls and those of the
   * clients derived from it; the root's ends every client derived from it.
   */
  close(): void;
  /**
   * A derived client, synchronously: `options` merged over this client's
   * (`headers` merged, `hooks` after this client's, `baseUrl` joined
   * under this client's, `retry` field by field, FetchInit fields over
   * this client's; a `fetch` given here is its transport), sharing this client's
   * breakers, retry budget, concurrency slots, rate-limit holds, cross-tab
   * link, last-good cache, stats and events: protection is per backend, not
   * per module. `budget`, `breaker`, `concurrency`, `storage`, `crossTab` and
   * `wasm` cannot be changed here (OptionsError).
   */
  extend(options?: ClientOptions): Client;
  /**
   * This client once its engine (the wasm) is in: at once for a client made
   * by createClient. For a createClientSync client, rejects as its calls
   * would: OptionsError (`option: 'wasm'`) when the module did not load
   * (asking again loads again), OptionsError for invalid options.
   */
  readonly ready: Promise<Client>;
}

/** Loads the wasm (once per realm), then makes the client; invalid options and a failed load reject. */
export function createClient(options?: ClientOptions): Promise<Client>;

/**
 * A client at once, its engine loading behind it: never throws (README,
 * "A client at once"). Its calls made before the wasm is in wait for it
 * within their own deadline and signal (AbortError, TimeoutError phase
 * 'deadline'); a failed load (or one not finished within the client's
 * `deadlineMs`) rejects them with OptionsError (`option: 'wasm'`), and the
 * next call loads again; invalid options reject them with their
 * OptionsError. Until the engine is in, `stats()` gives zeros,
 * `breakers()` none, `on()` listeners are kept for it, `extend()` gives a
 * client made when it arrives, and `close()` aborts the calls waiting.
 */
export function createClientSync(options?: ClientOptions): Client;

export type RetryDenied = 'budget' | 'method' | 'status' | 'deadline' | 'retryAfter' | 'attempts' | 'hook' | 'predicate';

export declare class StormguardError extends Error {
  /** `fields` are copied onto the error (`cause` as Error's own). */
  constructor(message?: string, fields?: object);
  readonly code:
    | 'TIMEOUT' | 'ABORTED' | 'NETWORK' | 'HTTP' | 'CIRCUIT_OPEN' | 'QUEUE_FULL' | 'PARSE' | 'INVALID_OPTIONS';
  readonly requestId: string;
  readonly attempts: number;
  readonly elapsedMs: number;
}
export declare class TimeoutError extends StormguardError {
  readonly name: 'TimeoutError';
  readonly code: 'TIMEOUT';
  readonly phase: 'attempt' | 'deadline' | 'queue';
  readonly retryDenied?: RetryDenied;
}
export declare class AbortError extends StormguardError {
  readonly name: 'AbortError';
  readonly code: 'ABORTED';
  readonly reason: unknown;
}
export declare class NetworkError extends StormguardError {
  readonly name: 'NetworkError';
  readonly code: 'NETWORK';
  readonly cause: unknown;
  /** True when the host reported no network (navigator.onLine false). */
  readonly offline?: boolean;
  readonly retryDenied?: RetryDenied;
}
export declare class HttpError extends StormguardError {
  readonly name: 'HttpError';
  readonly code: 'HTTP';
  readonly status: number;
  readonly statusText: string;
  /** At most 1024 UTF-16 code units of the decoded body; the rest is never read. */
  readonly body: string;
  /**
   * `body` parsed (the host's JSON.parse) when the response's content type is
   * JSON (`application/json` or any `+json`) and it parses; else absent.
   */
  readonly data?: unknown;
  readonly retryDenied?: RetryDenied;
  /** A 401 whose token refresh threw: what it threw. */
  readonly cause?: unknown;
}
export declare class CircuitOpenError extends StormguardError {
  readonly name: 'CircuitOpenError';
  readonly code: 'CIRCUIT_OPEN';
  readonly key: string;
  readonly retryInMs: number;
}
export declare class QueueFullError extends StormguardError {
  readonly name: 'QueueFullError';
  readonly code: 'QUEUE_FULL';
}
export declare class ParseError extends StormguardError {
  readonly name: 'ParseError';
  readonly code: 'PARSE';
  /** What JSON.parse or `validate` threw (undefined when a predicate returned false). */
  readonly cause: unknown;
  /** A Standard Schema's issues, at most 20 (a value `validate` rejected). */
  readonly issues?: ReadonlyArray<StandardSchemaV1.Issue>;
}
export declare class OptionsError extends StormguardError {
  readonly name: 'OptionsError';
  readonly code: 'INVALID_OPTIONS';
  readonly option: string;
  /** For `option` 'hooks', 'headers' or 'auth': what the function threw or rejected with. */
  readonly cause?: unknown;
}

export type AnyStormguardError =
  | TimeoutError | AbortError | NetworkError | HttpError | CircuitOpenError | QueueFullError | ParseError | OptionsError;

export function isStormguardError(e: unknown): e is AnyStormguardError;
