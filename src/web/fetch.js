// Response reading that is plumbing with no policy in it (fetch.rs imports
// it; wasm-bindgen bundles it with its glue, as it does request.js).

/**
 * Whether `headers` has any of `names` (fetch.rs asks before reading the
 * rate-limit fields one by one: most responses carry none, and one call
 * here costs less than four from wasm). True when asking throws (a
 * stand-in's headers): the field-by-field read decides then.
 */
export function hasAny(headers, names) {
  try {
    for (const name of names) if (headers.get(name) != null) return true;
    return false;
  } catch {
    return true;
  }
}
