// The core package's types: what must compile, and (@ts-expect-error) what must not.
import {
  createClient, createClientSync, isStormguardError, StormguardError, TimeoutError, AbortError, NetworkError,
  HttpError, CircuitOpenError, QueueFullError, ParseError, OptionsError,
} from 'stormguard';
import type {
  Client, ClientOptions, RetryOptions, SchemaOptions, SchemaResult, Stats, StormguardEvent,
  BreakerSnapshot, AnyStormguardError, StandardSchemaV1, ResponseType,
} from 'stormguard';

/** Compiles only when A and B are the same type. */
type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function expectType<A, B>(ok: Equal<A, B>): void { void ok; }

interface User { id: number; name: string }
interface Layout { title: string; blocks: { type: 'text' | 'button'; text: string }[] }

export async function options(): Promise<void> {
  // Every option, every sub-option off, and the empty call.
  const full: ClientOptions = {
    baseUrl: 'https://api.example.com/',
    headers: { authorization: 'Bearer x' },
    timeoutMs: 6000,
    gatewayTimeoutMs: 5000,
    deadlineMs: 20000,
    retry: {
      maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 8000, jitter: 'decorrelated',
      statuses: [503], methods: ['GET'], retryAfter: true, maxRetryAfterMs: 30000,
    },
    budget: { ratio: 0.1, minRetries: 3, windowMs: 10000 },
    breaker: {
      windowMs: 60000, minSamples: 10, failureRate: 0.5, consecutiveFailures: 3,
      openMs: 2000, maxOpenMs: 2000, halfOpenProbes: 1,
    },
    concurrency: { max: 6, queue: 100 },
    dedupe: true,
    storage: { prefix: 'stormguard:', maxEntryBytes: 262144 },
  };
  await createClient(full);
  await createClient();
  await createClient({});
  await createClient({ retry: false, budget: false, breaker: false, concurrency: false, storage: false });
  for (const jitter of ['full', 'equal', 'decorrelated', 'none'] as const) await createClient({ retry: { jitter } });
  await createClient({ breaker: { consecutiveFailures: false } });

  const hedged = await createClient({ hedge: { afterMs: 'p95', max: 2 } });
  await createClient({ hedge: { afterMs: 150 } });
  await createClient({ hedge: false });
  await hedged.request('/x', { hedge: false });
  await hedged.fetch('/x', { hedge: { afterMs: 50 } });
  // @ts-expect-error afterMs is a number or 'p95'
  await createClient({ hedge: { afterMs: 'p99' } });
  // @ts-expect-error afterMs is required
  await createClient({ hedge: { max: 2 } });

  // @ts-expect-error retry: true is not an option (omit it for the defaults)
  await createClient({ retry: true });
  // @ts-expect-error durations are numbers
  await createClient({ timeoutMs: '6000' });
  // @ts-expect-error an unknown jitter
  await createClient({ retry: { jitter: 'random' } });
  // @ts-expect-error concurrency is false or an object
  await createClient({ concurrency: 6 });
  // @ts-expect-error header values are strings
  await createClient({ headers: { 'x-n': 1 } });
  await createClient({ headers: new Headers({ 'x-app': 'a' }) });
  await createClient({ headers: [['x-app', 'a']] });
  // The wasm module, for bundlers that do not resolve it (esbuild), CDNs, CSP-strict pages.
  await createClient({ wasm: '/assets/stormguard_bg.wasm' });
  await createClient({ wasm: new URL('https://cdn.example.com/stormguard_bg.wasm') });
  await createClient({ wasm: await fetch('/stormguard_bg.wasm') });
  await createClient({ wasm: new Uint8Array(8) });
  await createClient({ wasm: new ArrayBuffer(8) });
  await createClient({ wasm: await WebAssembly.compileStreaming(fetch('/stormguard_bg.wasm')) });
  // @ts-expect-error wasm is a URL, a Response, bytes or a Module
  await createClient({ wasm: 42 });
  // @ts-expect-error statuses are numbers
  await createClient({ retry: { statuses: ['503'] } });
  // @ts-expect-error consecutiveFailures is a count or false
  await createClient({ breaker: { consecutiveFailures: true } });
  // @ts-expect-error dedupe is a boolean
  await createClient({ dedupe: 'yes' });
  // @ts-expect-error storage: true is not an option
  await createClient({ storage: true });
  // @ts-expect-error a misspelt option is caught
  await createClient({ timeOutMs: 100 });
  // @ts-expect-error budget.ratio is a number
  await createClient({ budget: { ratio: '10%' } });
  // @ts-expect-error breaker: true is not an option
  await createClient({ breaker: true });

  // FetchInit (issue 24): client defaults and the transport.
  await createClient({
    credentials: 'include', mode: 'cors', cache: 'no-store', redirect: 'follow', referrer: '',
    referrerPolicy: 'no-referrer', integrity: '', keepalive: false, priority: 'high',
  });
  await createClient({ fetch: globalThis.fetch });
  await createClient({ fetch: (request: Request) => fetch(request) });
  // @ts-expect-error an unknown credentials mode
  await createClient({ credentials: 'always' });
  // @ts-expect-error the transport is a function
  await createClient({ fetch: 'fetch' });
  // @ts-expect-error keepalive is a boolean
  await createClient({ keepalive: 'yes' });

  const retry: RetryOptions = { maxAttempts: 1 };
  void retry;
}

export async function calls(client: Client): Promise<void> {
  // request<T>: the caller names the body's type; unknown by default.
  const user = await client.request<User>('/users/42');
  expectType<typeof user, User>(true);
  const raw = await client.request('/users/42');
  expectType<typeof raw, unknown>(true);
  // @ts-expect-error unknown must be narrowed before use
  void raw.id;

  // responseType picks the type of what request() resolves with (issue 40 item 6).
  const response = await client.request('/x', { responseType: 'response' });
  expectType<typeof response, Response>(true);
  const text = await client.request('/x', { responseType: 'text', timeoutMs: 100 });
  expectType<typeof text, string>(true);
  const bytes = await client.request('/x', { responseType: 'bytes' });
  expectType<typeof bytes, Uint8Array>(true);
  const json = await client.request<User>('/x', { responseType: 'json' });
  expectType<typeof json, User>(true);
  const defaulted = await client.request('/x', { responseType: 'json' });
  expectType<typeof defaulted, unknown>(true);
  // With a type guard or a schema, validate's type wins (it checks what the responseType gave).
  const guarded = await client.request('/x', { responseType: 'text', validate: (v: unknown): v is 'ok' => v === 'ok' });
  expectType<typeof guarded, 'ok'>(true);
  // A responseType known only as the union: the caller's T (unknown by default).
  const some = await client.request('/x', { responseType: 'text' as ResponseType });
  expectType<typeof some, unknown>(true);
  // @ts-expect-error a text body is no object
  void (await client.request('/x', { responseType: 'text' })).id;

  await client.request(new URL('https://api.example.com/x'), {
    method: 'POST', body: { sku: 'a1' }, idempotencyKey: true, query: { page: 2, q: 'x', all: true },
    headers: { accept: 'application/json' }, responseType: 'json', timeoutMs: 100, deadlineMs: 1000,
    retry: false, breakerKey: 'orders', signal: new AbortController().signal,
  });
  await client.request('/x', { idempotencyKey: 'order-1', retry: { maxAttempts: 5 } });
  await client.request('/x', { retry: { retryOn: ({ error, attempt }) => (error instanceof HttpError && attempt < 2 ? true : undefined) } });
  await createClient({ retry: { retryOn: async () => false } });
  // @ts-expect-error retryOn returns a boolean or undefined
  await createClient({ retry: { retryOn: () => 'yes' } });
  const predicate: import('stormguard').RetryDenied = 'predicate';
  void predicate;
  // Every FetchInit field, sent as fetch sends it (issue 24).
  await client.request('https://api.example.org/me', {
    credentials: 'include', mode: 'cors', cache: 'reload', redirect: 'error', referrer: 'about:client',
    referrerPolicy: 'origin', integrity: 'sha256-x', keepalive: true, priority: 'low',
  });
  await client.schema('/layout.json', { credentials: 'omit', referrerPolicy: 'no-referrer' });
  // @ts-expect-error an unknown priority
  await client.request('/x', { priority: 'urgent' });
  // @ts-expect-error an unknown redirect mode
  await client.schema('/x', { redirect: 'ignore' });
  // @ts-expect-error idempotencyKey is a string or true
  await client.request('/x', { idempotencyKey: false });
  // @ts-expect-error an unknown responseType
  await client.request('/x', { responseType: 'blob' });
  // @ts-expect-error query values are strings, numbers or booleans
  await client.request('/x', { query: { a: null } });
  // Every shape the runtime and the README accept: Headers, a Map, pairs; URLSearchParams.
  await client.request('/x', {
    headers: new Headers({ accept: 'application/json' }),
    query: new URLSearchParams({ q: 'storm' }),
  });
  await client.request('/x', { headers: [['accept', 'text/plain']], query: [['page', 2], ['all', true]] });
  await client.request('/x', { headers: new Map([['x-a', 'b']]), query: new Map([['q', 'x']]) });
  await client.request('/x', { method: 'POST', body: new URLSearchParams({ a: '1' }) });
  await client.request('/x', { method: 'POST', body: new Blob(['x']) });
  await client.request('/x', { method: 'POST', body: 'text' });
  // @ts-expect-error header pairs hold strings
  await client.request('/x', { headers: [['x-n', 1]] });
  // @ts-expect-error a body is not a number
  await client.request('/x', { method: 'POST', body: 42 });

  const res = await client.fetch('/report.csv', { method: 'GET', timeoutMs: 100, retry: false });
  expectType<typeof res, Response>(true);
  await client.fetch(new Request('https://api.example.com/'));
  // A drop-in for fetch: installed as the global one, handed any RequestInit, `signal: null` too.
  globalThis.fetch = client.fetch;
  const wrapped: typeof fetch = (input, init) => client.fetch(input, init);
  await wrapped('/x', { signal: null });
  await client.fetch('/x', { signal: null, timeoutMs: 100 });
  // @ts-expect-error a call's signal is an AbortSignal or null
  await client.fetch('/x', { signal: 'stop' });

  // schema<T>: the result's data is T | undefined, source a closed set.
  const layout = await client.schema<Layout>('/layout.json', {
    cacheKey: 'layout', version: 3, maxAgeMs: 86_400_000,
    fallback: { title: 'offline', blocks: [] },
    validate: (v) => typeof v === 'object' && v !== null && 'title' in v,
    timeoutMs: 2000,
  });
  expectType<typeof layout, SchemaResult<Layout>>(true);
  expectType<typeof layout.data, Layout | undefined>(true);
  expectType<typeof layout.source, 'network' | 'cache' | 'fallback' | 'none'>(true);
  expectType<typeof layout.stale, boolean>(true);
  const age: number | undefined = layout.ageMs;
  void age;
  if (layout.error) {
    const e: StormguardError = layout.error;
    void e;
    // the error narrows by its code, as every stormguard error does
    if (layout.error.code === 'HTTP') expectType<typeof layout.error.status, number>(true);
    if (layout.error.code === 'CIRCUIT_OPEN') expectType<typeof layout.error.retryInMs, number>(true);
  }
  // T is inferred from the fallback too.
  const inferred = await client.schema('/layout.json', { fallback: { title: 'x', blocks: [] } as Layout });
  expectType<typeof inferred.data, Layout | undefined>(true);
  const untyped = await client.schema('/layout.json');
  expectType<typeof untyped.data, unknown>(true);
  // @ts-expect-error the fallback must be a T
  await client.schema<Layout>('/layout.json', { fallback: { title: 1 } });
  await client.schema('/layout.txt', { responseType: 'text' });
  // @ts-expect-error a stored copy must be JSON or text
  await client.schema('/layout.bin', { responseType: 'bytes' });
  // @ts-expect-error version is a string or a number
  await client.schema('/layout.json', { version: true });
  const schemaOptions: SchemaOptions<Layout> = { cacheKey: 'k', method: 'GET' };
  void schemaOptions;

  const stats: Stats = client.stats();
  const n: number = stats.amplification + stats.fallbacks + stats.inFlight;
  void n;
  const breakers: BreakerSnapshot[] = client.breakers();
  const state: 'closed' | 'open' | 'half-open' | undefined = breakers[0]?.state;
  void state;
  const off = client.on('retry', (e: StormguardEvent) => void e.delayMs);
  off();
  // @ts-expect-error an unknown event name
  client.on('success', () => {});
  client.close();
}

export async function errors(client: Client): Promise<void> {
  try {
    await client.request('/x');
  } catch (e) {
    // instanceof narrows to each class and its fields.
    if (e instanceof HttpError) {
      const fields: [number, string, string, string | undefined] = [e.status, e.statusText, e.body, e.retryDenied];
      expectType<typeof e.code, 'HTTP'>(true);
      void fields;
    } else if (e instanceof TimeoutError) {
      expectType<typeof e.phase, 'attempt' | 'deadline' | 'queue'>(true);
    } else if (e instanceof CircuitOpenError) {
      const f: [string, number] = [e.key, e.retryInMs];
      void f;
    } else if (e instanceof OptionsError) {
      const option: string = e.option;
      void option;
    } else if (e instanceof AbortError) {
      const reason: unknown = e.reason;
      void reason;
    } else if (e instanceof StormguardError) {
      const base: [string, number, number, string] = [e.requestId, e.attempts, e.elapsedMs, e.message];
      void base;
      // @ts-expect-error status exists only on HttpError
      void e.status;
    }
    // @ts-expect-error a caught value is unknown until narrowed
    void e.code;

    // isStormguardError narrows to the union, and `code` discriminates it.
    if (isStormguardError(e)) {
      expectType<typeof e, AnyStormguardError>(true);
      switch (e.code) {
        case 'HTTP':
          expectType<typeof e, HttpError>(true);
          void e.status;
          break;
        case 'TIMEOUT':
          expectType<typeof e, TimeoutError>(true);
          void e.phase;
          break;
        case 'ABORTED':
          expectType<typeof e, AbortError>(true);
          break;
        case 'NETWORK':
          expectType<typeof e, NetworkError>(true);
          void e.cause;
          break;
        case 'CIRCUIT_OPEN':
          expectType<typeof e, CircuitOpenError>(true);
          void e.retryInMs;
          break;
        case 'QUEUE_FULL':
          expectType<typeof e, QueueFullError>(true);
          break;
        case 'PARSE':
          expectType<typeof e, ParseError>(true);
          break;
        case 'INVALID_OPTIONS':
          expectType<typeof e, OptionsError>(true);
          void e.option;
          break;
        default: {
          const never: never = e; // every code is handled
          void never;
        }
      }
      // @ts-expect-error not a stormguard code
      if (e.code === 'ENOTFOUND') void 0;
      // @ts-expect-error retryInMs is CircuitOpenError's alone
      void e.retryInMs;
    }
  }
}

export function hierarchy(e: HttpError | QueueFullError | ParseError): Error {
  const base: StormguardError = e; // every class extends StormguardError extends Error
  return base;
}

export async function undefinedSkipped(client: Client): Promise<void> {
  // ky and axios habits: undefined values are skipped (a call's undefined header removes the client's).
  await client.request('/x', { query: { page: 1, q: undefined }, headers: { 'x-a': 'a', authorization: undefined } });
  await createClient({ headers: { 'x-tenant': undefined } });
  // @ts-expect-error null is not skipped: it is no value
  await client.request('/x', { headers: { 'x-a': null } });
}

export async function jsonErrorBodies(client: Client): Promise<void> {
  try {
    await client.request('/orders', { method: 'POST', body: {} });
  } catch (e) {
    if (e instanceof HttpError) {
      // A JSON error body, parsed; unknown until narrowed.
      const data: unknown = e.data;
      // @ts-expect-error data is unknown
      void e.data.title;
      void data;
    }
  }
}

export async function validation(client: Client): Promise<void> {
  // A Standard Schema as zod, valibot and arktype declare theirs: the call resolves with its output.
  const userSchema: StandardSchemaV1<unknown, User> = {
    '~standard': { version: 1, vendor: 'test', validate: (v) => ({ value: v as User }) },
  };
  const user = await client.request('/users/1', { validate: userSchema, timeoutMs: 100 });
  expectType<typeof user, User>(true);
  // A transform: input and output differ; the output is what resolves.
  const dated: StandardSchemaV1<string, Date> = {
    '~standard': {
      version: 1, vendor: 'test',
      validate: async (v) => (typeof v === 'string' ? { value: new Date(v) } : { issues: [{ message: 'not a date', path: ['at'] }] }),
    },
  };
  const when = await client.request('/now', { validate: dated });
  expectType<typeof when, Date>(true);
  // A library's own copy of the interface (another declaration, the same shape) fits too.
  interface TheirSchema<O> { readonly '~standard': { readonly version: 1; readonly vendor: string;
    readonly validate: (v: unknown) => { readonly value: O; readonly issues?: undefined } | { readonly issues: ReadonlyArray<{ readonly message: string }> };
    readonly types?: { readonly input: unknown; readonly output: O } } }
  const theirs = {} as TheirSchema<Layout>;
  const layout = await client.request('/layout', { validate: theirs });
  expectType<typeof layout, Layout>(true);
  // A type guard narrows; a plain predicate leaves the caller's type (unknown by default).
  const isUser = (v: unknown): v is User => typeof v === 'object' && v !== null && 'id' in v;
  const guarded = await client.request('/users/1', { validate: isUser });
  expectType<typeof guarded, User>(true);
  const checked = await client.request('/x', { validate: (v: unknown): boolean => v !== null });
  expectType<typeof checked, unknown>(true);
  const named = await client.request<User>('/x', { validate: (v: unknown): boolean => v !== null });
  expectType<typeof named, User>(true);
  // @ts-expect-error validate is a function or a Standard Schema
  await client.request('/x', { validate: 'yes' });
  // @ts-expect-error a Standard Schema has version 1
  await client.request('/x', { validate: { '~standard': { version: 2, vendor: 'x', validate: () => ({ value: 1 }) } } });

  // schema(): the result's data is the schema's output.
  const doc = await client.schema('/users/1', { validate: userSchema, cacheKey: 'me', fallback: { id: 0, name: '' } });
  expectType<typeof doc.data, User | undefined>(true);
  const guardedDoc = await client.schema('/users/1', { validate: isUser });
  expectType<typeof guardedDoc.data, User | undefined>(true);
  const options: SchemaOptions<User> = { validate: userSchema };
  void options;

  try {
    await client.request('/users/1', { validate: userSchema });
  } catch (e) {
    if (e instanceof ParseError) {
      const issues: ReadonlyArray<StandardSchemaV1.Issue> | undefined = e.issues;
      void issues?.[0]?.message;
    }
  }
}

// Issue 25: header functions, auth, hooks and derived clients.
export async function everyday(): Promise<void> {
  let token: string | null = 'abc';
  const api = await createClient({
    baseUrl: 'https://api.example.com/',
    headers: async () => ({ 'x-tenant': 't1' }),
    auth: {
      token: () => token,
      scheme: 'Bearer',
      refresh: async () => {
        token = 'def';
      },
    },
    hooks: {
      beforeRequest: [
        (request, info) => {
          request.headers.set('x-attempt', String(info.attempt));
        },
        async (request) => new Request(request, { headers: { 'x-signed': '1' } }),
      ],
      afterResponse: (_request, response) => (response.status === 204 ? new Response('{}') : undefined),
      beforeRetry: ({ error, delayMs, attempt }) => {
        expectType<typeof error, AnyStormguardError>(true);
        return !(error instanceof HttpError && error.status === 409) && delayMs < 5000 && attempt < 3;
      },
      beforeError: (error) => (error instanceof HttpError ? new TimeoutError('wrapped', { phase: 'attempt' }) : error),
    },
  });
  await createClient({ headers: () => new Headers({ a: 'b' }) });
  await createClient({ auth: { token: async () => undefined, origins: ['https://api.example.com'] } });
  await createClient({ auth: { token: () => 't', origins: ['*'] as const } });
  const users: Client = api.extend({ baseUrl: 'users/', headers: { 'x-module': 'users' }, timeoutMs: 3000 });
  await users.request<User>('42');
  users.close();
  // @ts-expect-error auth needs a token function
  await createClient({ auth: { scheme: 'Token' } });
  // @ts-expect-error auth.origins is a list of origins
  await createClient({ auth: { token: () => 't', origins: 'https://api.example.com' } });
  // @ts-expect-error a header function returns headers
  await createClient({ headers: () => 42 });
  // @ts-expect-error beforeRequest returns a Request or nothing
  await createClient({ hooks: { beforeRequest: () => 'x' } });
  // @ts-expect-error beforeError returns a StormguardError
  await createClient({ hooks: { beforeError: () => new Error('plain') } });
  // @ts-expect-error not a hook of ky's
  await createClient({ hooks: { afterRequest: () => undefined } });
  const denied: import('stormguard').RetryDenied = 'hook';
  void denied;
}

// A client at once (issue 39): createClientSync gives a Client, not a promise; `ready` the same client.
export async function atOnce(): Promise<void> {
  const api = createClientSync({ baseUrl: 'https://api.example.com/' });
  expectType<typeof api, Client>(true);
  const user = await api.request<User>('/users/42');
  expectType<typeof user, User>(true);
  expectType<Awaited<typeof api.ready>, Client>(true);
  const client: Client = await createClient();
  expectType<typeof client.ready, Promise<Client>>(true);
  // @ts-expect-error: not a promise
  await createClientSync().then(() => {});
  // @ts-expect-error: read-only
  api.ready = Promise.resolve(api);
}
