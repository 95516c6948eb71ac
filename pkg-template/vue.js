// stormguard/vue: useSchema, a Vue 3 composable over client.schema().
// Plain ESM with Vue as its only import (an optional peer dependency).
import { getCurrentScope, onScopeDispose, shallowReadonly, shallowRef, unref, watch } from 'vue';
import { anySignal, schemaKey, schemaOf } from './core.js';

/** A value, a ref or a getter, read now. */
const read = (v) => (typeof v === 'function' ? v() : unref(v));

/**
 * `useSchema(client, url, options?)`: `client` is a Client or the Promise that
 * createClient returns; `url` and `options` may be plain values, refs or
 * getters, and a null or undefined URL means "nothing to load yet". The call
 * restarts (aborting the previous one) when the URL, the cacheKey or the
 * version changes, and is aborted when the calling component's scope is
 * disposed (unmount). Returns shallow read-only refs (a write warns and is
 * ignored, as for a computed); never throws into rendering: failures end up
 * in `error`.
 */
export function useSchema(client, url, options) {
  const data = shallowRef(undefined);
  const source = shallowRef(undefined);
  const stale = shallowRef(false);
  const ageMs = shallowRef(undefined);
  const loading = shallowRef(false);
  const error = shallowRef(undefined);
  let controller = null;
  let disposed = false;

  const reset = () => {
    data.value = undefined;
    source.value = undefined;
    stale.value = false;
    ageMs.value = undefined;
    error.value = undefined;
  };

  function refresh() {
    // After unmount nothing would ever abort a new call.
    if (disposed) return Promise.resolve();
    controller?.abort();
    controller = null;
    const u = read(url);
    if (u == null) {
      loading.value = false;
      return Promise.resolve();
    }
    const o = read(options);
    const mine = new AbortController();
    controller = mine;
    loading.value = true;
    const { signal, done } = anySignal([mine.signal, o?.signal]);
    // A client that did not load still serves the fallback.
    return schemaOf(client, String(u), { ...o, signal })
      .then(
        (r) => {
          if (mine.signal.aborted) return;
          data.value = r.data;
          source.value = r.source;
          stale.value = r.stale;
          ageMs.value = r.ageMs;
          error.value = r.error;
        },
        (e) => {
          if (mine.signal.aborted) return;
          reset();
          error.value = e;
        },
      )
      .finally(() => {
        done();
        if (controller !== mine) return;
        controller = null;
        loading.value = false;
      });
  }

  watch(
    () => {
      const u = read(url);
      const o = read(options);
      return schemaKey(u == null ? null : String(u), o?.cacheKey, o?.version);
    },
    (key, previous) => {
      if (previous !== undefined) reset(); // another document: drop the last one's
      refresh();
    },
    { immediate: true },
  );
  if (getCurrentScope()) {
    onScopeDispose(() => {
      disposed = true;
      controller?.abort();
    });
  }

  const out = { data, source, stale, ageMs, loading, error };
  for (const k in out) out[k] = shallowReadonly(out[k]);
  return { ...out, refresh };
}
