// Types of stormguard/react (see README, "Vite + React").
import type { Client, SchemaOptions, SchemaResult, StandardSchemaV1, ValidatedBy } from './index.js';

export type SchemaSource = SchemaResult<unknown>['source'];

export interface UseSchemaResult<T> {
  /** The document: from the network, the last-good cache or the fallback; undefined before the first result. */
  data: T | undefined;
  /** Where `data` came from; undefined before the first result. */
  source: SchemaSource | undefined;
  /** True unless `source` is 'network' (false before the first result). */
  stale: boolean;
  /** Age of the cached copy served, when `source` is 'cache'. */
  ageMs: number | undefined;
  /** A call is in flight (true from the first render while there is a URL). */
  loading: boolean;
  /**
   * Why the network copy was not used (a StormguardError: narrow it with
   * isStormguardError), or why the call failed (the caller's own signal aborted). When the client
   * promise rejects (the wasm did not load), `data` is the `fallback` option
   * (source 'fallback'; 'none' without one) and `error` says why. Never thrown into rendering.
   */
  error: Error | undefined;
  /** Loads again now, aborting a call in flight; resolves when state is updated. */
  refresh(): Promise<void>;
}

/**
 * Loads `url` through `client.schema()` and re-renders with the result.
 * `client`: a Client or the Promise from createClient (create it once, outside
 * the component: a new client or promise on every render restarts the call).
 * `url` null or undefined: nothing is loaded. The call is aborted on unmount
 * and restarted when the URL, `cacheKey` or `version` changes.
 */
export function useSchema<S extends StandardSchemaV1>(
  client: Client | PromiseLike<Client>,
  url: string | URL | null | undefined,
  options: ValidatedBy<SchemaOptions<StandardSchemaV1.InferOutput<S>>, S>,
): UseSchemaResult<StandardSchemaV1.InferOutput<S>>;
export function useSchema<T = unknown>(
  client: Client | PromiseLike<Client>,
  url: string | URL | null | undefined,
  options?: SchemaOptions<T>,
): UseSchemaResult<T>;
