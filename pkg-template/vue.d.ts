// Types of stormguard/vue (see README, "Vue 3").
import type { Ref, ShallowRef } from 'vue';
import type { Client, SchemaOptions, SchemaResult, StandardSchemaV1, ValidatedBy } from './index.js';

export type SchemaSource = SchemaResult<unknown>['source'];

/** A plain value, a ref or a getter (Vue's MaybeRefOrGetter). */
export type MaybeRefOrGetter<T> = T | Ref<T> | (() => T);

export interface UseSchemaReturn<T> {
  /** The document: from the network, the last-good cache or the fallback; undefined before the first result. */
  data: Readonly<ShallowRef<T | undefined>>;
  /** Where `data` came from; undefined before the first result. */
  source: Readonly<ShallowRef<SchemaSource | undefined>>;
  /** True unless `source` is 'network' (false before the first result). */
  stale: Readonly<ShallowRef<boolean>>;
  /** Age of the cached copy served, when `source` is 'cache'. */
  ageMs: Readonly<ShallowRef<number | undefined>>;
  /** A call is in flight. */
  loading: Readonly<ShallowRef<boolean>>;
  /**
   * Why the network copy was not used (a StormguardError: narrow it with
   * isStormguardError), or why the call failed (the caller's own signal aborted). When the client
   * promise rejects (the wasm did not load), `data` is the `fallback` option
   * (source 'fallback'; 'none' without one) and `error` says why. Never thrown into rendering.
   */
  error: Readonly<ShallowRef<Error | undefined>>;
  /** Loads again now, aborting a call in flight; resolves when the refs are updated. */
  refresh(): Promise<void>;
}

/**
 * Loads `url` through `client.schema()` into shallow refs.
 * `client`: a Client or the Promise from createClient. `url` and `options`:
 * values, refs or getters; a null or undefined URL loads nothing. The call is
 * aborted when the component unmounts (its effect scope is disposed) and
 * restarted when the URL, `cacheKey` or `version` changes.
 */
export function useSchema<S extends StandardSchemaV1>(
  client: Client | PromiseLike<Client>,
  url: MaybeRefOrGetter<string | URL | null | undefined>,
  options: MaybeRefOrGetter<ValidatedBy<SchemaOptions<StandardSchemaV1.InferOutput<S>>, S>>,
): UseSchemaReturn<StandardSchemaV1.InferOutput<S>>;
export function useSchema<T = unknown>(
  client: Client | PromiseLike<Client>,
  url: MaybeRefOrGetter<string | URL | null | undefined>,
  options?: MaybeRefOrGetter<SchemaOptions<T> | undefined>,
): UseSchemaReturn<T>;
