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
