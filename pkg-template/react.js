// stormguard/react: useSchema, a React 18/19 hook over client.schema().
// Plain ESM with React as its only import (an optional peer dependency).
import * as React from 'react';
import { anySignal, schemaKey, schemaOf } from './core.js';

const IDLE = { data: undefined, source: undefined, stale: false, ageMs: undefined, error: undefined };

/** Runs at every commit, before layout and passive effects (and not on a server). */
const useCommit = React.useInsertionEffect ?? React.useLayoutEffect;

/**
 * `useSchema(client, url, options?)`: `client` is a Client or the Promise that
 * createClient returns; `url` null or undefined means "nothing to load yet".
 * The call restarts (aborting the previous one) when the client, the URL, the
 * cacheKey or the version changes, and is aborted on unmount. Other options
 * are read when a call starts, so an inline options object is fine.
 * Never throws into rendering: failures end up in `error`.
 */
export function useSchema(client, url, options) {
  const href = url == null ? null : String(url);
  const cacheKey = options?.cacheKey;
  const version = options?.version;
  const key = schemaKey(href, cacheKey, version);

  const [state, setState] = React.useState(() => ({ key, ...IDLE, loading: href !== null }));
  // What the committed render asked for, for the effect and refresh(). Written at commit, not
  // during render: a render React has not committed (a transition still pending) must not point
  // refresh() at a URL the screen does not show.
  const latest = React.useRef(null);
  const keyRef = React.useRef(key);
  useCommit(() => {
    latest.current = { client, href, options };
    keyRef.current = key;
  });
  const current = React.useRef(null); // the AbortController of the call in flight
  const mounted = React.useRef(false);

  const run = React.useCallback((runKey) => {
    current.current?.abort();
    const { client: c, href: u, options: o } = latest.current;
    if (u === null) {
      current.current = null;
      setState({ key: runKey, ...IDLE, loading: false });
      return Promise.resolve();
    }
    const controller = new AbortController();
    current.current = controller;
    setState((s) => {
      if (s.key !== runKey) return { key: runKey, ...IDLE, loading: true };
      return s.loading ? s : { ...s, loading: true };
    });
    const { signal, done } = anySignal([controller.signal, o?.signal]);
    const settle = (next) => {
      if (!controller.signal.aborted) setState({ key: runKey, ...next, loading: false });
    };
    // A client that did not load (a wasm the server did not serve, say) still
    // serves the fallback rather than a skeleton forever.
    return schemaOf(c, u, { ...o, signal })
      .then(
        (r) => settle({ data: r.data, source: r.source, stale: r.stale, ageMs: r.ageMs, error: r.error }),
        (e) => settle({ ...IDLE, error: e }),
      )
      .finally(() => {
        done();
        if (current.current === controller) current.current = null;
      });
  }, []);

  React.useEffect(() => {
    mounted.current = true;
    run(key);
    return () => {
      mounted.current = false;
      current.current?.abort();
    };
  }, [client, key, run]);

  // After unmount nothing would ever abort a new call.
  const refresh = React.useCallback(
    () => (mounted.current ? run(keyRef.current) : Promise.resolve()),
    [run],
  );

  // Until the effect of a new key has run, report the new key's initial state
  // rather than the previous URL's document.
  const view = state.key === key ? state : { ...IDLE, loading: href !== null };
  return {
    data: view.data,
    source: view.source,
    stale: view.stale,
    ageMs: view.ageMs,
    loading: view.loading,
    error: view.error,
    refresh,
  };
}
