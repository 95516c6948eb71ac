// Awaiting a promise from wasm (src/web/runtime/executor.rs, `settle`):
// the promise reports to the one wasm function `settled`, by the number its
// Settle future was given, instead of through a pair of wasm-bindgen
// closures made (and registered for finalization) per awaited promise.
// wasm-bindgen bundles this file with its glue, as it does request.js.

/** `promise`'s outcome handed to `settled(id, fulfilled, value)` in its reaction job. */
export function watch(promise, id, settled) {
  promise.then(
    (value) => settled(id, true, value),
    (reason) => settled(id, false, reason),
  );
}

/**
 * Node: the async context of the code running now, as a function that runs
 * another function in it (`AsyncLocalStorage.snapshot`), or undefined where
 * there is none (browsers, Node before 20.16). The executor polls a task in
 * the context of the `request()` that spawned it, whatever event resumed it:
 * a token or headers function reading per-request state (an
 * AsyncLocalStorage) reads that request's, on every attempt.
 */
const snapshot = globalThis.process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage?.snapshot;
export function context() {
  return snapshot?.();
}
